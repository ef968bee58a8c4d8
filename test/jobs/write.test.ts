import { describe, expect, it, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { commitEach, utf8Bytes, writeBytes } from '../../jobs/write.js';
import { afterCommits, RETRY, retrySoon } from '../../jobs/retry.js';

describe('one write type, one retry policy', () => {
  test('commitEach commits each write alone and counts the ones that lost their race', async () => {
    const store = new MemoryStore({ now: () => 0 });
    await store.put('/a', '1');
    const failed = await commitEach(store, [
      { compares: [{ key: '/a', target: 'value', op: '=', value: '1' }], ops: [{ put: { key: '/b', value: 'x' } }] },
      { compares: [{ key: '/a', target: 'value', op: '=', value: '2' }], ops: [{ put: { key: '/c', value: 'y' } }] },
    ]);
    expect(failed).toBe(1);
    expect((await store.get('/b'))?.value).toBe('x');
    expect(await store.get('/c')).toBeNull();
  });

  test('a lost race runs the step again soon; none runs it not at all', () => {
    expect(retrySoon(1_000)).toEqual({ at: 1_000 + RETRY.conflictMs });
    expect(afterCommits(1_000, 2)).toEqual(retrySoon(1_000));
    expect(afterCommits(1_000, 0)).toEqual({});
  });
});

describe('utf8Bytes: the UTF-8 size of a string without encoding it', () => {
  const samples = ['', 'a', '/decisions/scheduler/svc0-00000001', JSON.stringify({ a: '"quoted" \\ \u0001' }), 'é', 'zoné-b', '日本', 'a😀b', '😀😀', `${'x'.repeat(1000)}ß`, `ß${'x'.repeat(1000)}`];
  it.each(samples)('counts %j as its encoding does', (s) => {
    expect(utf8Bytes(s)).toBe(new TextEncoder().encode(s).length);
  });

  it('sizes a write by its keys and values', () => {
    expect(writeBytes({ compares: [{ key: '/a', target: 'value', op: '=', value: 'é' }], ops: [{ put: { key: '/b', value: '日' } }, { delete: { key: '/c' } }] })).toBe(2 + 2 + 2 + 3 + 2);
  });
});
