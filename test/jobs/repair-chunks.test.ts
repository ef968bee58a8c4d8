import { expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, type KeyKind } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import type { ClusterView } from '../../jobs/controllers/view.js';
import type { Fact } from '../../jobs/facts.js';
import { auditor, controllers, scheduler } from '../../jobs/controllers/index.js';
import { planReleases, REPAIR_CHUNK } from '../../jobs/controllers/scheduler/plan-releases.js';
import { why } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

/**
 * Issue 20: a node holding more replicas than one txn can compare (the scheduler's groups stop
 * at 120 operations) is repaired, and its replicas released, in bounded chunks across steps,
 * each chunk a correct allocation of its own. Bench.settle calls each step on the store
 * directly, so a txn the store refuses (over its 128 operations, CCA-E0109) fails the test.
 */
/** Settle, moving the clock between rounds (a service's scale decision is one per millisecond, 50 replicas each). */
async function until(b: Bench, all: Parameters<Bench['settle']>[0], done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 20 && !(await done()); i++) {
    b.t += 1_000;
    await b.settle(all, 80);
  }
  expect(await done()).toBe(true);
}

test('a repair of a node holding 300 replicas completes in chunks; releasing all 300 does too', { timeout: 240_000 }, async () => {
  const b = new Bench();
  await b.register('n1', 'a', 8_000, 400);
  const all = controllers({ retention: false });
  await b.settle(all);
  await b.apply({ name: 'web', image: 'web:1', replicas: 300, resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 } });
  await until(b, all, async () => (await b.assignments('n1')).length === 300);

  // Damage the allocation: the auditor opens a finding.
  const alloc = (await b.fact('allocation', 'n1'))!;
  await b.store.put(buildKey('allocation', 'n1'), encodeFact('allocation', { ...alloc, used: { cpuMillis: 1, memoryBytes: 1 }, replicas: alloc.replicas.slice(7) }));
  await b.settle(all);
  const finding = (await b.fact('audit', 'n1'))!;
  expect(finding.open).toBe(true);

  // `cca repair node n1`: chunks of REPAIR_CHUNK, the finding open until the last one.
  await b.store.put(buildKey('repair', 'n1'), encodeFact('repair', { node: 'n1', requestedBy: 'admin', at: b.t, finding: finding.revision }));
  b.t += 1_000;
  // A step commits its housekeeping, reads again and goes on once (scheduler/index.ts): after
  // one step two chunks are done, and the allocation is a correct record of the first
  // 2 × REPAIR_CHUNK assignments; the finding stays open.
  await b.step(scheduler);
  await b.step(auditor);
  const first = (await b.fact('allocation', 'n1'))!;
  expect(first.replicas).toEqual((await b.assignments('n1')).map((a) => a.replica).sort().slice(0, 2 * REPAIR_CHUNK));
  expect(first.used.cpuMillis).toBe(2 * REPAIR_CHUNK * 10);
  expect((await b.fact('audit', 'n1'))!.open).toBe(true);
  await b.settle(all, 40);
  const repaired = (await b.fact('allocation', 'n1'))!;
  expect(repaired.replicas).toHaveLength(300);
  expect(repaired.used).toEqual({ cpuMillis: 3_000, memoryBytes: 300 * 1024 * 1024 });
  expect((await b.fact('audit', 'n1'))!.open).toBe(false);
  const actions = (await why(b.store, 'node', 'n1')).history.map((h) => h.decision.action);
  expect(actions.filter((a) => a === 'repairing allocation')).toHaveLength(Math.ceil(300 / REPAIR_CHUNK) - 1);
  expect(actions).toContain('repaired allocation');
  expect(actions).toContain('audit finding closed');

  // Releasing all 300 at once (the service deleted) goes in chunks too.
  await b.store.delete(buildKey('service', 'web'));
  await until(b, all, async () => (await b.assignments('n1')).length === 0);
  const empty = (await b.fact('allocation', 'n1'))!;
  expect(empty.replicas).toEqual([]);
  expect(empty.used).toEqual({ cpuMillis: 0, memoryBytes: 0 });
  expect((await b.fact('audit', 'n1'))?.open ?? false).toBe(false);
});

test('a release during a repair under way subtracts only what the allocation lists', () => {
  const spec = serviceSpecSchema.parse({ name: 'web', image: 'web:1', resources: { cpuMillis: 10, memoryBytes: 1024 } });
  const fact = <K extends KeyKind>(kind: K, key: string, value: unknown): Fact<K> => {
    const text = encodeFact(kind, value as never);
    return { key, kv: { key, value: text, createRevision: 1, modRevision: 1, version: 1, lease: 0 }, value: decodeFact(kind, key, text) };
  };
  const assigned = (id: string) => fact('assigned', buildKey('assigned', 'n1', id), { replica: id, service: 'web', node: 'n1', tenure: 1, resources: spec.resources, specRevision: 1, spec, placedAt: 0 });
  const [a, b] = [assigned('web-aaaaaaaa'), assigned('web-bbbbbbbb')];
  // A repair's first chunk listed only web-aaaaaaaa; web-bbbbbbbb is retired and released now.
  const alloc = fact('allocation', buildKey('allocation', 'n1'), { node: 'n1', tenure: 1, used: spec.resources, replicas: ['web-aaaaaaaa'] });
  const retired = fact('replica', buildKey('replica', 'web', 'web-bbbbbbbb'), { id: 'web-bbbbbbbb', service: 'web', specRevision: 1, desired: 'stop', createdAt: 0, retired: true });
  const live = fact('replica', buildKey('replica', 'web', 'web-aaaaaaaa'), { id: 'web-aaaaaaaa', service: 'web', specRevision: 1, desired: 'run', createdAt: 0 });
  const view = { nodes: new Map(), statuses: new Map(), allocations: new Map([['n1', alloc]]), audits: new Map(), nodeOps: new Map(), assignments: new Map([[a.value.replica, a], [b.value.replica, b]]), byNode: new Map([['n1', [a, b]]]) } as ClusterView;
  const groups = planReleases(view, new Map([[live.value.id, live], [retired.value.id, retired]]), new Map(), 1_000);
  const put = groups.get('n1')!.ops.find((op) => 'put' in op && op.put.key === buildKey('allocation', 'n1'));
  const next = JSON.parse((put as { put: { value: string } }).put.value) as { used: unknown; replicas: string[] };
  expect(next).toMatchObject({ used: spec.resources, replicas: ['web-aaaaaaaa'] });
});
