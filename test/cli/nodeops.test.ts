import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { auditor, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import type { MemoryStore } from '../../db/memory.js';
import { liveServers, seedAllocation, seedNode, seedReplica, type Live } from './harness.js';

const open = liveServers();

/** The controllers over the server's store until a round writes nothing (the clock is the real one: the API's is too). */
async function settle(store: MemoryStore): Promise<void> {
  const cs = [replicaController, scheduler, nodeController({ lostGraceMs: 60_000 }), auditor];
  for (let i = 0; i < 20; i++) {
    const before = await store.revision();
    for (const c of cs) for (const s of (await c.subjects?.(store)) ?? [undefined]) {
      await c.reconcile({ store, now: Date.now(), random: Math.random, ...(s !== undefined ? { subject: s } : {}) });
    }
    if ((await store.revision()) === before) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('not settled');
}

const actions = async (live: Live, node: string) => (await live.run(['why', 'node', node, '-o', 'json'])).stdout;

describe('cca node cordon|uncordon|drain|remove, cca repair node', () => {
  test('cordon, drain and uncordon write the intent with a decision `cca why node` shows', async () => {
    const live = await open();
    await seedNode(live.store, 'n1', 'a', 2_000);
    const c = await live.run(['node', 'cordon', 'n1']);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/^node n1 cordoned: it takes no new placements/);
    const op = async () => decodeFact('nodeOp', buildKey('nodeOp', 'n1'), (await live.store.get(buildKey('nodeOp', 'n1')))!.value);
    expect(await op()).toMatchObject({ cordoned: true, drain: false });
    expect((await live.run(['node', 'drain', 'n1'])).code).toBe(0);
    expect(await op()).toMatchObject({ cordoned: true, drain: true });
    expect((await live.run(['node', 'uncordon', 'n1'])).code).toBe(0);
    expect(await op()).toMatchObject({ cordoned: false, drain: false });
    const why = await actions(live, 'n1');
    for (const a of ['cordon node n1', 'drain node n1', 'uncordon node n1']) expect(why).toContain(a);
    const ghost = await live.run(['node', 'cordon', 'ghost']);
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain('CCA-E0619');
    const bad = await live.run(['node', 'frob', 'n1']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('CCA-E0703');
  });

  test('remove refuses a registered node (CCA-E0680) and forgets a lost one, its replica replaced', async () => {
    const live = await open();
    const tenure = await seedNode(live.store, 'n1', 'a', 2_000);
    await seedNode(live.store, 'n2', 'b', 2_000);
    // n2 can run web:1 (the seeded node has no image catalogue); same tenure, so it stays ready.
    const n2 = buildKey('node', 'n2');
    await live.store.put(n2, encodeFact('node', { ...decodeFact('node', n2, (await live.store.get(n2))!.value), images: { 'web:1': 'sha256:1' } }));
    const refused = await live.run(['node', 'remove', 'n1']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('CCA-E0680');
    await live.store.put(buildKey('service', 'web'), encodeFact('service', { name: 'web', image: 'web:1', replicas: 1 }));
    await seedReplica(live.store, { service: 'web', id: 'web-aaaaaaaa', node: 'n1', tenure, state: 'running', ready: true });
    await seedAllocation(live.store, 'n1', tenure, ['web-aaaaaaaa']);
    await live.store.put(buildKey('placement', 'web-aaaaaaaa'), encodeFact('placement', { replica: 'web-aaaaaaaa', service: 'web', node: 'n1', tenure, at: 1 }));
    await live.store.delete(buildKey('node', 'n1')); // its lease expired
    await settle(live.store);
    expect((await live.store.range({ prefix: '/assigned/n1/' })).kvs).toHaveLength(1); // the grace holds it
    const r = await live.run(['node', 'remove', 'n1']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('node n1 removed');
    await settle(live.store);
    expect((await live.store.range({ prefix: '/assigned/n1/' })).kvs).toHaveLength(0);
    expect((await live.store.range({ prefix: '/assigned/n2/' })).kvs).toHaveLength(1);
    expect(await live.store.get(buildKey('nodeStatus', 'n1'))).toBeNull();
    expect(await actions(live, 'n1')).toContain('"removed"');
  });

  test('repair: nothing to repair is CCA-E0681; an open finding is repaired by the scheduler', async () => {
    const live = await open();
    const tenure = await seedNode(live.store, 'n1', 'a', 2_000);
    const none = await live.run(['repair', 'node', 'n1']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('CCA-E0681');
    expect((await live.run(['repair', 'service', 'web'])).stderr).toContain('CCA-E0703');
    await seedAllocation(live.store, 'n1', tenure, ['web-bbbbbbbb']); // no such assignment: the auditor finds it
    await settle(live.store);
    const audit = async () => decodeFact('audit', buildKey('audit', 'n1'), (await live.store.get(buildKey('audit', 'n1')))!.value);
    expect((await audit()).open).toBe(true);
    const r = await live.run(['repair', 'node', 'n1']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^node n1: repair of the finding at revision \d+ requested/);
    await settle(live.store);
    expect((await audit()).open).toBe(false);
    const why = await actions(live, 'n1');
    for (const a of ['asked the scheduler to repair node n1', 'repaired allocation', 'audit finding closed']) expect(why).toContain(a);
  });
});
