import { afterAll, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { waitFor } from '../support/wait.js';
import { graphileCluster } from './graphile-harness.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * The autoscaler as a graphile-worker job over Postgres: its periodic wake is a job's run_at
 * (no change to its keys wakes it), and the replica controller follows its intent.
 */
test('the autoscaler wakes on its timer as a graphile-worker job and the replica controller follows its intent', async () => {
  const { store } = await graphileCluster('graphile_autoscale', cleanups, { autoscaler: { syncMs: 300 } });

  const { id } = await store.grantLease(60);
  const reg = await store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', zone: 'a', capacity: { cpuMillis: 4_000, memoryBytes: 2 ** 32 }, images: { 'web:1': 'x' } }), { lease: id });
  const spec = serviceSpecSchema.parse({ name: 'web', image: 'web:1', replicas: 1, resources: { cpuMillis: 100 }, autoscale: { min: 1, max: 4, targetCpuPercent: 50 } });
  await store.put(buildKey('service', 'web'), encodeFact('service', spec));
  const placed = await waitFor('one assignment', () => store.range({ prefix: prefixOf('assigned') }), (r) => r.count === 1, 20_000);
  const a = decodeFact('assigned', placed.kvs[0]!.key, placed.kvs[0]!.value);
  await waitFor('node n1 ready', () => store.get(buildKey('nodeStatus', 'n1')), (kv) => !!kv && decodeFact('nodeStatus', kv.key, kv.value).state === 'ready', 20_000);

  // Play the agent: the one replica runs at 150% of its request → ceil(1 × 3) = 3.
  await store.put(
    buildKey('observed', 'n1', a.replica),
    encodeFact('observed', { replica: a.replica, service: 'web', node: 'n1', tenure: reg.revision, state: 'running', usage: { cpuMillis: 150, memoryBytes: 1 }, at: 0 }),
  );
  const intent = await waitFor('the autoscale intent at desired 3', () => store.get(buildKey('autoscale', 'web')), (kv) => !!kv && decodeFact('autoscale', kv.key, kv.value).desired === 3, 20_000);
  expect(decodeFact('autoscale', intent!.key, intent!.value).observedCpuPercent).toBe(150);
  const replicas = await waitFor('3 running replica records of web',
    () => store.range({ prefix: prefixOf('replica', 'web') }),
    (r) => r.kvs.map((kv) => decodeFact('replica', kv.key, kv.value)).filter((x) => x.desired === 'run' && !x.retired).length === 3,
    20_000,
  );
  expect(replicas.count).toBe(3);
  const spec2 = decodeFact('service', buildKey('service', 'web'), (await store.get(buildKey('service', 'web')))!.value);
  expect(spec2.replicas).toBe(1);
}, 60_000);
