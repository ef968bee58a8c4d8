import { afterAll, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { waitFor } from '../support/wait.js';
import { withEvidence } from '../support/pod-evidence.js';
import { graphileCluster } from './graphile-harness.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * Backoff as graphile-worker jobs over Postgres: the held replacement is placed by a job
 * the scheduler scheduled at `notBefore` (its run_at), not by anything kept in memory.
 */
test('a replacement after an init failure is placed at its notBefore by a timed scheduler job', async () => {
  const { store, evidence } = await graphileCluster('graphile_ordering', cleanups);

  const { id } = await store.grantLease(60);
  await store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', zone: 'a', capacity: { cpuMillis: 2_000, memoryBytes: 2 ** 32 }, images: { 'web:1': 'x' } }), { lease: id });
  const tenure = (await store.get(buildKey('node', 'n1')))!.createRevision;
  const spec = serviceSpecSchema.parse({ name: 'mig', image: 'web:1', init: [{ name: 'migrate', command: ['migrate'] }] });
  await store.put(buildKey('service', 'mig'), encodeFact('service', spec));
  const first = await withEvidence(waitFor('one assignment on n1', () => store.range({ prefix: prefixOf('assigned', 'n1') }), (r) => r.count === 1, 20_000), evidence);
  const replica = first.kvs[0]!.key.split('/')[3]!;

  // The agent reports the init step failed.
  await store.put(
    buildKey('observed', 'n1', replica),
    encodeFact('observed', { replica, service: 'mig', node: 'n1', tenure, state: 'failed', exitCode: 3, init: { step: 'migrate', state: 'failed', exitCode: 3, tail: 'no db' }, at: Date.now() }),
  );
  const records = await waitFor('a retry of mig with a notBefore',
    () => store.range({ prefix: prefixOf('replica', 'mig') }),
    (r) => r.kvs.some((kv) => decodeFact('replica', kv.key, kv.value).notBefore !== undefined),
    20_000,
  );
  const next = records.kvs.map((kv) => decodeFact('replica', kv.key, kv.value)).find((r) => r.notBefore !== undefined)!;
  expect(next).toMatchObject({ attempt: 1, failure: 'init step migrate failed (code 3)' });
  expect(next.notBefore! - next.createdAt).toBe(1_000);
  // Placed no earlier than notBefore; nothing else changes by then, so a timed job placed it.
  const placed = await withEvidence(waitFor('the retry placed', () => store.get(buildKey('placement', next.id)), (kv) => kv !== null, 20_000), evidence);
  const at = decodeFact('placement', placed!.key, placed!.value).at;
  expect(at).toBeGreaterThanOrEqual(next.notBefore!);
}, 60_000);
