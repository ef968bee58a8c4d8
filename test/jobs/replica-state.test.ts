import { expect, test } from 'vitest';
import { buildKey, encodeFact, prefixOf } from '../../core/keys.js';
import { nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { readReplicaState, readReplicaStates } from '../../jobs/controllers/replica-state.js';
import { listFacts } from '../../jobs/facts.js';
import type { RangeRequest, Store } from '../../db/store.js';
import { Bench } from './harness.js';

const all = [replicaController, scheduler, nodeController()];

/**
 * A large service's states are read prefix by prefix and joined in memory; that must be
 * exactly what reading each replica's keys one at a time gives, in every standing: unplaced,
 * placed without a report, running, exited, lost with its node, on a node that is gone.
 */
test('readReplicaStates of a large service equals reading each replica one by one', async () => {
  const b = new Bench();
  for (const [n, zone] of [['n1', 'a'], ['n2', 'b'], ['n3', 'c']] as const) await b.register(n, zone, 64_000);
  await b.settle(all);
  await b.apply({ name: 'web', image: 'web:1', replicas: 60, resources: { cpuMillis: 100 } });
  await b.apply({ name: 'huge', image: 'web:1', replicas: 3, resources: { cpuMillis: 100_000 } }); // never placed
  await b.settle(all);
  const records = await listFacts(b.store, 'replica', prefixOf('replica', 'web'));
  expect(records.length).toBeGreaterThan(32); // the batched path
  const assigned = await b.assignments();
  for (const [i, a] of assigned.filter((x) => x.service === 'web').entries()) {
    if (i % 3 === 0) await b.observe(a.node, a.replica, 'running');
    else if (i % 3 === 1) await b.observe(a.node, a.replica, 'exited', 1);
  }
  // n3 goes away: its lease is revoked, the node controller marks it lost and its replicas.
  await b.store.revokeLease(b.leases.get('n3')!);
  for (let i = 0; i < 3; i++) {
    b.t += 5_000; // past the grace after the loss
    await b.step(nodeController());
  }
  // A record with a placement whose node key is gone, and one never placed, are in the mix.
  await b.store.put(buildKey('replica', 'web', 'web-zzzzzzzz'), encodeFact('replica', { id: 'web-zzzzzzzz', service: 'web', specRevision: 1, desired: 'run', createdAt: b.t }));

  for (const service of ['web', 'huge']) {
    const rs = await listFacts(b.store, 'replica', prefixOf('replica', service));
    const one: unknown[] = [];
    for (const r of rs) one.push(await readReplicaState(b.store, r));
    expect(await readReplicaStates(b.store, rs)).toEqual(one);
  }
  const states = await readReplicaStates(b.store, await listFacts(b.store, 'replica', prefixOf('replica', 'web')));
  expect(states.some((s) => s.lost)).toBe(true);
  expect(states.some((s) => s.observation?.value.state === 'running')).toBe(true);
  expect(states.some((s) => !s.placement)).toBe(true);
});

/**
 * A step of one service reads that service's keys, not the cluster's: with many services,
 * reading every node's placements and reports per step made each round cost services ×
 * cluster (docs/benchmarks.md, "Cost as the cluster grows", item 3).
 */
test('readReplicaStates reads only the keys of the replicas it is given, whatever else the cluster holds', async () => {
  const b = new Bench();
  for (const [n, zone] of [['n1', 'a'], ['n2', 'b'], ['n3', 'c']] as const) await b.register(n, zone, 64_000);
  await b.settle(all);
  await b.apply({ name: 'web', image: 'web:1', replicas: 40, resources: { cpuMillis: 100, memoryBytes: 2 ** 24 } });
  await b.apply({ name: 'big', image: 'web:1', replicas: 400, resources: { cpuMillis: 100, memoryBytes: 2 ** 24 } });
  await b.settle(all);
  for (const a of await b.assignments()) await b.observe(a.node, a.replica, 'running');
  let keys = 0;
  const counted = new Proxy(b.store, {
    get(target, p) {
      if (p === 'range') return async (r: RangeRequest) => { const x = await target.range(r); keys += x.kvs.length; return x; };
      if (p === 'getMany') return async (ks: readonly string[]) => { keys += ks.length; return target.getMany(ks); };
      if (p === 'get') return async (k: string) => { keys += 1; return target.get(k); };
      const v = (target as unknown as Record<string | symbol, unknown>)[p];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  const web = await listFacts(b.store, 'replica', prefixOf('replica', 'web'));
  const states = await readReplicaStates(counted, web);
  expect(states.filter((s) => s.observation?.value.state === 'running')).toHaveLength(40);
  // Its placement, assignment, report and loss per replica, and each of its 3 nodes' two keys.
  expect(keys).toBe(40 * 4 + 3 * 2);
});
