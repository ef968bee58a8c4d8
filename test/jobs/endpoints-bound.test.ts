import { expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import type { Observation } from '../../core/model/facts.js';
import { controllers, endpointController } from '../../jobs/controllers/index.js';
import { ENDPOINT_LIMITS, readyCount } from '../../jobs/controllers/endpoints.js';
import { why } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

/**
 * Issue 20: the endpoint set is one value, so it lists ready replicas (by replica id) only
 * while their entries fit ENDPOINT_LIMITS.listedBytes; `ready` counts them all. Entries here
 * carry 4 kB addresses, so 150 ready replicas pass the bound.
 */
test('a ready set past the byte bound lists what fits, counts every ready replica, and converges', { timeout: 240_000 }, async () => {
  const b = new Bench();
  await b.register('n1', 'a', 8_000, 400);
  const all = controllers({ retention: false });
  await b.apply({ name: 'web', image: 'web:1', replicas: 150, resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 } });
  for (let i = 0; i < 20 && (await b.assignments('n1')).length < 150; i++) {
    b.t += 1_000;
    await b.settle(all, 80);
  }
  const assigned = await b.assignments('n1');
  expect(assigned).toHaveLength(150);
  const tenure = (await b.store.get(buildKey('node', 'n1')))!.createRevision;
  for (const a of assigned) {
    const obs: Observation = { replica: a.replica, service: 'web', node: 'n1', tenure, state: 'running', restarts: 0, health: { liveness: 'unknown', readiness: 'unknown' }, image: '', address: `${a.replica}.${'x'.repeat(4_000)}`, ports: { http: 8080 }, at: b.t };
    await b.store.put(buildKey('observed', 'n1', a.replica), encodeFact('observed', obs));
  }
  b.t += 1_000;
  for (let i = 0; i < 5; i++) await b.step(endpointController, 'web');
  const kv = (await b.store.get(buildKey('endpoints', 'web')))!;
  const value = decodeFact('endpoints', kv.key, kv.value);
  expect(readyCount(value)).toBe(150);
  expect(value.endpoints.length).toBeLessThan(150);
  expect(value.endpoints.length).toBeGreaterThan(100);
  expect(Buffer.byteLength(kv.value)).toBeLessThanOrEqual(ENDPOINT_LIMITS.listedBytes + 1_024);
  // The first by replica id are listed.
  expect(value.endpoints.map((e) => e.replica)).toEqual(assigned.map((a) => a.replica).sort().slice(0, value.endpoints.length));
  // Converged: another step writes nothing.
  const rev = await b.store.revision();
  await b.step(endpointController, 'web');
  expect(await b.store.revision()).toBe(rev);
  const reasons = (await why(b.store, 'service', 'web')).history.flatMap((h) => h.decision.reasons).join('\n');
  expect(reasons).toContain(`150 ready, ${value.endpoints.length} listed`);

  // One replica stops being ready: the count follows, the list still fits.
  const gone = assigned[0]!.replica;
  const o = decodeFact('observed', buildKey('observed', 'n1', gone), (await b.store.get(buildKey('observed', 'n1', gone)))!.value);
  await b.store.put(buildKey('observed', 'n1', gone), encodeFact('observed', { ...o, state: 'exited', exitCode: 1 }));
  b.t += 1_000;
  for (let i = 0; i < 5; i++) await b.step(endpointController, 'web');
  const after = decodeFact('endpoints', kv.key, (await b.store.get(buildKey('endpoints', 'web')))!.value);
  expect(readyCount(after)).toBe(149);
  expect(after.endpoints.some((e) => e.replica === gone)).toBe(false);
});
