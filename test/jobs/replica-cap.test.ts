import { describe, expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { LIMITS } from '../../core/model/defaults.js';
import { DNS_LABEL_MAX } from '../../core/model/names.js';
import { allocationMaxBytes, NODE_REPLICAS, validateNode } from '../../core/model/node.js';
import { limits } from '../../db/keyspace.js';
import { controllers } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { nodeViews } from '../../jobs/views/status.js';
import { Bench } from './harness.js';

/**
 * Issue 20: a node holds at most `capacity.replicas` replicas (`cca agent --max-replicas`), a
 * placement resource like CPU and memory, so the records that list a node's replicas (its
 * allocation, its network rule set) are bounded by construction.
 */
describe('the per-node replica cap', () => {
  test('the scheduler places no further than the cap; the rest wait with CCA-E0451; the node shows held/cap', async () => {
    const b = new Bench();
    await b.register('n1', 'a', 4_000, 3);
    await b.register('n2', 'b', 4_000, 2);
    const all = controllers({ retention: false });
    await b.apply({ name: 'web', image: 'web:1', replicas: 7, resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 } });
    await b.settle(all);
    b.t += 1_000; // a pending decision is rewritten at a later time (its key holds the time)
    await b.settle(all);
    expect(await b.assignments('n1')).toHaveLength(3);
    expect(await b.assignments('n2')).toHaveLength(2);
    expect((await b.fact('allocation', 'n1'))!.replicas).toHaveLength(3);
    const placed = new Set((await b.assignments()).map((a) => a.replica));
    const waiting = (await b.live('web')).filter((r) => !placed.has(r.id));
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    const w = await why(b.store, 'replica', waiting[0]!.id);
    const reasons = w.history.flatMap((h) => h.decision.reasons).join("\n");
    expect(reasons).toContain('2 nodes hold as many replicas as they allow');
    expect(reasons).toContain('CCA-E0451');
    const views = (await nodeViews(b.store)).nodes;
    expect(views.map((n) => [n.name, n.replicas, n.capacity.replicas])).toEqual([['n1', 3, 3], ['n2', 2, 2]]);

    // Room on a node again (one more allowed at its next registration): the next waiting replica goes there.
    await b.register('n3', 'c', 4_000, 1);
    b.t += 1_000;
    await b.settle(all);
    expect(await b.assignments('n3')).toHaveLength(1);
  });

  test('the cap defaults to NODE_REPLICAS.default and is refused above NODE_REPLICAS.max (CCA-E0317)', () => {
    const base = { name: 'n1', capacity: { cpuMillis: 1000, memoryBytes: 1024 } };
    const ok = validateNode(base);
    expect(ok.ok && ok.value.capacity.replicas).toBe(NODE_REPLICAS.default);
    const big = validateNode({ ...base, capacity: { ...base.capacity, replicas: NODE_REPLICAS.max + 1 } });
    expect(big.ok).toBe(false);
    expect(!big.ok && big.diagnostics[0]!.code).toBe('CCA-E0317');
  });
});

test('an allocation record is bounded by construction: the most replicas of the longest ids fit allocationMaxBytes(); one more is refused', () => {
  const longest = (i: number) => `${'s'.repeat(DNS_LABEL_MAX - 4)}${String(i).padStart(4, '0')}-abcdefgh`;
  const value = { node: 'n'.repeat(253), tenure: Number.MAX_SAFE_INTEGER, used: { cpuMillis: LIMITS.cpuMillis * NODE_REPLICAS.max, memoryBytes: Number.MAX_SAFE_INTEGER }, replicas: Array.from({ length: NODE_REPLICAS.max }, (_, i) => longest(i)) };
  const text = encodeFact('allocation', value);
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(allocationMaxBytes());
  expect(allocationMaxBytes()).toBeLessThan(limits.maxValueBytes);
  expect(() => encodeFact('allocation', { ...value, replicas: [...value.replicas, longest(NODE_REPLICAS.max)] })).toThrow();
});
