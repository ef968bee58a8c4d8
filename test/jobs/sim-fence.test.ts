import { expect, test } from 'vitest';
import { SimWorld } from '../../jobs/sim/world.js';

/**
 * The fence rule under a store outage, found by the simulation once it ran the real agent:
 * node1 is cut off for a while, comes back while the store is down (the server answers 503),
 * and is cut off again just as the store returns. Its lease had only what was left before the
 * outage; renewing the fence by a whole TTL on the 503s let the old copy run on after the lease
 * expired and its replacement started elsewhere.
 */
test.each([4_000, 5_000, 6_000, 7_000])('partitioned %i ms, back during a store outage, cut off again as it ends: fenced before any replacement', async (cutMs) => {
  const w = new SimWorld({ seed: 7 });
  for (const n of ['node1', 'node2']) w.addNode({ name: n, cpuMillis: 2_000, memoryBytes: 4 * 1024 ** 3 });
  await w.runFor(3_000);
  await w.apply({ name: 'web', image: 'web:1', replicas: 2 });
  await w.runFor(10_000);
  w.partition('node1', true);
  await w.runFor(cutMs);
  w.setStoreDown(true);
  w.partition('node1', false);
  await w.runFor(20_000);
  w.partition('node1', true);
  w.setStoreDown(false);
  await w.runFor(15_000);
  w.partition('node1', false);
  await w.runFor(30_000);
  await w.checkQuiescent();
  expect(w.violations, w.trace.slice(-30).join('\n')).toEqual([]);
});

/** Where each replica runs, and since when: the simulation's "same pid". */
function runningSince(w: SimWorld): string {
  const out: string[] = [];
  for (const [node, a] of w.agents) for (const r of a.runtime.alive()) out.push(`${r.replica}@${node}@${r.startedAt}`);
  return out.sort().join(' ');
}

/**
 * An agent restarted just before the store goes down (demo-c0 met it under load): its first
 * call is a registration resuming its lease, and the server answers "store down" to it as to a
 * keepalive. The lease's clock stands still meanwhile, so the restarted agent's fence point must
 * move by the span it was told so, as a running agent's does; before, only keepalives moved it,
 * and the restarted agent fenced every workload a few seconds into the outage.
 */
test.each([
  [false, 12_000],
  [false, 40_000],
  [true, 30_000],
  [true, 90_000],
])('quorum %s: an agent restarted as the store goes down for %i ms keeps its workloads; nothing moves', async (quorum, downMs) => {
  const w = new SimWorld({ seed: 11, quorum });
  for (const n of ['node1', 'node2', 'node3']) w.addNode({ name: n, zone: 'z', cpuMillis: 2_000, memoryBytes: 4 * 1024 ** 3 });
  await w.runFor(5_000);
  await w.apply({ name: 'web', image: 'web:1', replicas: 3 });
  await w.runFor(30_000);
  const before = runningSince(w);
  expect(before.split(' ')).toHaveLength(3);
  w.restartAgent('node1');
  w.setStoreDown(true);
  await w.runFor(downMs);
  expect(runningSince(w), w.trace.slice(-30).join('\n')).toBe(before);
  w.setStoreDown(false);
  await w.runFor(30_000);
  expect(runningSince(w), w.trace.slice(-30).join('\n')).toBe(before);
  await w.checkQuiescent();
  expect(w.violations, w.trace.slice(-30).join('\n')).toEqual([]);
});
