import { afterAll, expect, test } from 'vitest';
import { buildKey, encodeFact, prefixOf } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { why } from '../../jobs/decisions/why.js';
import { waitFor } from '../support/wait.js';
import { graphileCluster } from './graphile-harness.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** The real controllers, unchanged, as graphile-worker jobs over Postgres: each step one transaction. */
test('the controllers place replicas and explain them when run as graphile-worker jobs', async () => {
  const { store, driver, reads, diagnostics } = await graphileCluster('graphile_controllers', cleanups);

  for (const [n, zone] of [['n1', 'a'], ['n2', 'b']] as const) {
    const { id } = await store.grantLease(30);
    await store.put(buildKey('node', n), encodeFact('node', { name: n, zone, capacity: { cpuMillis: 2_000, memoryBytes: 2 ** 32 }, images: { 'web:1': 'x' } }), { lease: id });
  }
  // Both nodes ready before the service exists: a step that saw only n1 ready would rightly place all four there
  // (they fit), which a loaded run once did.
  await waitFor('both nodes ready', () => store.range({ prefix: prefixOf('nodeStatus') }), (r) => r.kvs.filter((kv) => (JSON.parse(kv.value) as { state: string }).state === 'ready').length === 2, 20_000);
  const spec = serviceSpecSchema.parse({ name: 'web', image: 'web:1', replicas: 4, resources: { cpuMillis: 500 } });
  await store.put(buildKey('service', 'web'), encodeFact('service', spec));

  const placed = await waitFor('4 assignments', () => store.range({ prefix: prefixOf('assigned') }), (r) => r.count === 4, 20_000).catch(async (e: Error) => {
    const keys = (await store.range({ prefix: '/' })).kvs.map((kv) => `${kv.modRevision} ${kv.key}`);
    throw new Error(`${e.message}\nthe store: ${keys.join(', ')}\nreported: ${diagnostics.join('\n') || 'nothing'}`);
  });
  expect(placed.count).toBe(4);
  const nodes = placed.kvs.map((kv) => kv.key.split('/')[2]).sort();
  expect(nodes).toEqual(['n1', 'n1', 'n2', 'n2']);
  const replica = placed.kvs[0]!.key.split('/')[3]!;
  const answer = await why(store, 'replica', replica);
  expect(answer.complete).toBe(true);
  expect(answer.chain.map((l) => l.decision.action)).toEqual(['placed on ' + placed.kvs[0]!.key.split('/')[2], 'created', 'scaled up by 4']);

  // Converged: one more pass over every controller and subject writes nothing.
  await new Promise((r) => setTimeout(r, 500));
  const before = await store.revision();
  await driver.kickAll();
  await new Promise((r) => setTimeout(r, 1_000));
  expect(await store.revision()).toBe(before);
  // The steps read their state from the pod's read mirror; only histories (decisions) and
  // credentials from the database, and no read fell back for the mirror lagging.
  const ways = Object.fromEntries(reads);
  expect(ways.mirror, JSON.stringify(ways)).toBeGreaterThan(100);
  expect(ways.mirror, JSON.stringify(ways)).toBeGreaterThan(10 * (ways['store-uncovered'] ?? 0));
  expect(ways['store-behind'] ?? 0, JSON.stringify(ways)).toBe(0);
}, 60_000);
