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
