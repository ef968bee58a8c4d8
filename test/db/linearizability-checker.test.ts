import { describe, expect, test } from 'vitest';
import { checkHistory, type CommittedLog, type Recorded } from './linearizability.js';

const ok = { kind: 'ok' } as const;
const at = (client: number, invoked: number, returned: number, op: Recorded['op'], outcome: Recorded['outcome'] = ok): Recorded => ({
  client,
  op,
  outcome,
  invoked,
  returned,
});
const log = (...w: [number, string, string][]): CommittedLog => new Map(w.map(([r, key, value]) => [r, { key, value }]));

describe('the linearizability checker catches what it must', () => {
  const base = [at(0, 0, 1, { type: 'put', key: 'a', value: 'v1', result: { revision: 2 } })];

  test('accepts a legal history', () => {
    const h = [...base, at(1, 2, 3, { type: 'get', key: 'a', result: { value: 'v1', modRevision: 2, revision: 2 } })];
    expect(checkHistory(h, log([2, 'a', 'v1']), 1, 2).problems).toEqual([]);
  });

  test('a stale read after a completed write', () => {
    const h = [...base, at(1, 2, 3, { type: 'get', key: 'a', result: { value: null, modRevision: 0, revision: 1 } })];
    expect(checkHistory(h, log([2, 'a', 'v1']), 1, 2).problems.join()).toMatch(/real-time order/);
  });

  test('a read of a value the state never had at that revision', () => {
    const h = [...base, at(1, 2, 3, { type: 'get', key: 'a', result: { value: 'v9', modRevision: 2, revision: 2 } })];
    expect(checkHistory(h, log([2, 'a', 'v1']), 1, 2).problems.join()).toMatch(/saw/);
  });

  test('an acknowledged write missing from the log, and a gap', () => {
    const h = [...base, at(1, 2, 3, { type: 'put', key: 'b', value: 'w', result: { revision: 3 } })];
    const p = checkHistory(h, log([2, 'a', 'v1']), 1, 3).problems.join();
    expect(p).toMatch(/not in the log/);
    expect(p).toMatch(/revision 3 is missing/);
  });

  test('a CAS that succeeded although its compare could not hold', () => {
    const h = [...base, at(1, 2, 3, { type: 'cas', key: 'a', value: 'v2', expectModRevision: 0, result: { succeeded: true, revision: 3 } })];
    expect(checkHistory(h, log([2, 'a', 'v1'], [3, 'a', 'v2']), 1, 3).problems.join()).toMatch(/should have failed/);
  });

  test('a write reported as failed that took effect', () => {
    const h = [...base, at(1, 2, 3, { type: 'put', key: 'b', value: 'w' }, { kind: 'failed' })];
    expect(checkHistory(h, log([2, 'a', 'v1'], [3, 'b', 'w']), 1, 3).problems.join()).toMatch(/reported as failed/);
  });

  test('an unknown outcome may have happened or not', () => {
    const maybe = at(1, 2, Infinity, { type: 'put', key: 'b', value: 'w' }, { kind: 'unknown' });
    expect(checkHistory([...base, maybe], log([2, 'a', 'v1'], [3, 'b', 'w']), 1, 3)).toMatchObject({ ok: true, unknownApplied: 1 });
    expect(checkHistory([...base, maybe], log([2, 'a', 'v1']), 1, 2)).toMatchObject({ ok: true, unknownLost: 1 });
  });

  test('writes committed out of real-time order', () => {
    const h = [
      at(0, 0, 1, { type: 'put', key: 'a', value: 'x', result: { revision: 3 } }),
      at(1, 2, 3, { type: 'put', key: 'b', value: 'y', result: { revision: 2 } }),
    ];
    expect(checkHistory(h, log([2, 'b', 'y'], [3, 'a', 'x']), 1, 3).problems.join()).toMatch(/real-time order/);
  });
});
