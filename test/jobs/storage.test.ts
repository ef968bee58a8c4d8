import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import { auditor, nodeController, replicaController, scheduler, storageController } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { ADMIN, securedApp } from '../handlers/harness.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const all = [replicaController, scheduler, node, auditor, storageController];
const Mi = 1024 ** 2;

const db = (extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'db',
  image: 'web:1',
  replicas: 1,
  stopGraceMs: 1_000,
  volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data' }],
  ...extra,
});

async function cluster(nodes: [string, string][] = [['n1', 'a'], ['n2', 'b'], ['n3', 'c']]) {
  const b = new Bench();
  for (const [n, z] of nodes) await b.register(n, z);
  await b.settle(all);
  return b;
}

async function volumes(b: Bench) {
  return (await listFacts(b.store, 'volume', prefixOf('volume'))).map((f) => f.value);
}

async function placementOf(b: Bench, replica: string): Promise<string | undefined> {
  const kv = await b.store.get(buildKey('placement', replica));
  return kv ? decodeFact('placement', kv.key, kv.value).node : undefined;
}

async function lostOf(b: Bench, node: string, replica: string) {
  const kv = await b.store.get(buildKey('lost', node, replica));
  return kv ? decodeFact('lost', kv.key, kv.value) : undefined;
}

describe('storage controller', () => {
  test('wants a volume on the node of each placed stateful replica, with a decision, and a converged system writes nothing', async () => {
    const b = await cluster();
    await b.apply(db({ replicas: 2 }));
    await b.apply({ name: 'web', image: 'web:1', replicas: 2 });
    await b.settle(all);
    const placed = await Promise.all((await b.live('db')).map((r) => placementOf(b, r.id)));
    const vs = await volumes(b);
    expect(vs.map((v) => v.node).sort()).toEqual([...placed].sort());
    expect(vs.every((v) => v.service === 'db' && v.volume === 'data' && v.sizeBytes === 64 * Mi)).toBe(true);
    const answer = await why(b.store, 'service', 'db');
    expect(answer.history.some((l) => l.decision.controller === 'storage' && l.decision.action.startsWith('volume data wanted on'))).toBe(true);
    const rev = await b.store.revision();
    await b.step(storageController);
    expect(await b.store.revision()).toBe(rev);
  });

  test("desired against observed: the agent's first report of the volume ready at its size is a decision, once", async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply(db());
    await b.settle(all);
    const observe = (sizeBytes: number, usedBytes: number) =>
      b.store.put(buildKey('observedVolume', 'n1', 'db', 'data'), encodeFact('observedVolume', { state: 'ready', path: '/state/volumes/db/data/data', sizeBytes, usedBytes, at: b.t }));
    await observe(32 * Mi, 0); // not the wanted size: not ready yet
    await b.step(storageController);
    expect((await why(b.store, 'service', 'db')).history.some((l) => l.decision.action === 'volume data ready on n1')).toBe(false);
    await observe(64 * Mi, 10);
    await b.step(storageController);
    const answer = await why(b.store, 'service', 'db');
    expect(answer.history[0]!.decision.action).toBe('volume data ready on n1');
    expect(answer.history[0]!.decision.reasons[0]).toContain('10 used');
    expect(answer.complete).toBe(true);
    await observe(64 * Mi, 20);
    const rev = await b.store.revision();
    await b.step(storageController);
    expect(await b.store.revision()).toBe(rev);
  });

  test('keeps the volume while the service declares it (no replica there now), resizes it, releases it when the service is deleted', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply(db());
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(1);
    await b.apply(db({ replicas: 0 }));
    await b.settle(all);
    b.t += 2_000; // past the stop grace (not the node's lease)
    await b.settle(all);
    expect(await b.assignments()).toHaveLength(0);
    expect(await volumes(b)).toHaveLength(1); // retained: the data waits for the next replica here
    await b.apply(db({ replicas: 0, volumes: [{ name: 'data', sizeBytes: 128 * Mi, mountPath: '/data' }] }));
    await b.apply(db({ replicas: 1, volumes: [{ name: 'data', sizeBytes: 128 * Mi, mountPath: '/data' }] }));
    await b.settle(all);
    expect((await volumes(b))[0]!.sizeBytes).toBe(128 * Mi);
    await b.store.delete(buildKey('service', 'db'));
    await b.settle(all);
    b.t += 2_000; // past the stop grace (not the node's lease)
    await b.settle(all);
    expect(await b.assignments()).toHaveLength(0);
    // Released, not deleted: the data waits out keep_for (24 h by default).
    const [pending] = await volumes(b);
    expect(pending!.releasing).toEqual({ since: expect.any(Number), deleteAt: pending!.releasing!.since + 24 * 3_600_000, why: 'service-deleted' });
    expect((await why(b.store, 'service', 'db')).history[0]!.decision.action).toBe('volume data on n1 released: its data is deleted in 1d');
    b.t = pending!.releasing!.deleteAt - 1;
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(1);
    b.t += 1;
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(0);
    const answer = await why(b.store, 'service', 'db');
    expect(answer.history[0]!.decision.action).toBe('volume data deleted on n1');
    expect(answer.complete).toBe(true);
  });

  test('a released volume is saved by applying its service again, or by an operator hold; keep_for = 0 deletes at once', async () => {
    let b = await cluster([['n1', 'a']]);
    const spec = db({ volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data', keepForMs: 60_000 }] });
    await b.apply(spec);
    await b.settle(all);
    await b.store.delete(buildKey('service', 'db'));
    await b.settle(all);
    b.t += 2_000;
    await b.settle(all);
    const r = (await volumes(b))[0]!.releasing!;
    expect(r.deleteAt - r.since).toBe(60_000);
    // Applied again within keep_for: back in use, nothing deleted.
    await b.apply(spec);
    await b.settle(all);
    expect((await volumes(b))[0]).toMatchObject({ kept: false });
    expect((await volumes(b))[0]!.releasing).toBeUndefined();
    expect(await b.assignments('n1')).toHaveLength(1);
    // Deleted again, then held: kept past keep_for, until the hold goes.
    await b.store.delete(buildKey('service', 'db'));
    await b.settle(all);
    b.t += 2_000;
    await b.settle(all);
    await b.store.put(buildKey('volumeHold', 'n1', 'db', 'data'), encodeFact('volumeHold', { at: b.t }));
    await b.settle(all);
    b.t += 120_000;
    await b.settle(all);
    expect((await volumes(b))[0]).toMatchObject({ kept: true });
    expect((await volumes(b))[0]!.releasing).toBeUndefined();
    await b.store.delete(buildKey('volumeHold', 'n1', 'db', 'data'));
    await b.settle(all);
    expect((await volumes(b))[0]!.releasing?.deleteAt).toBe(b.t + 60_000);
    b.t += 60_000;
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(0);
    // keep_for = 0: deleted as soon as it is released (a fresh cluster: n1's lease ran out above).
    b = await cluster([['n1', 'a']]);
    await b.apply(db({ volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data', keepForMs: 0 }] }));
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(1);
    await b.store.delete(buildKey('service', 'db'));
    await b.settle(all);
    b.t += 2_000;
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(0);
  });

  test('a volume the spec no longer declares is released once no replica there uses it', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply(db());
    await b.settle(all);
    await b.apply(db({ volumes: [] }));
    await b.settle(all);
    // The old replica (made from the old spec) still runs and mounts it: kept.
    const assigned = await b.assignments('n1');
    expect(assigned[0]!.spec.volumes).toHaveLength(1);
    expect(await volumes(b)).toHaveLength(1);
    await b.store.delete(buildKey('service', 'db'));
    await b.settle(all);
    b.t += 2_000;
    await b.settle(all);
    expect((await volumes(b))[0]!.releasing?.why).toBe('service-deleted');
    b.t += 24 * 3_600_000;
    await b.settle(all);
    expect(await volumes(b)).toHaveLength(0);
  });
});

describe('scheduler: stateful affinity', () => {
  test('a crashed stateful replica is replaced on the node holding its volume', async () => {
    const b = await cluster();
    await b.apply(db());
    await b.settle(all);
    const first = (await b.live('db'))[0]!;
    const home = (await placementOf(b, first.id))!;
    for (let i = 0; i < 3; i++) {
      const cur = (await b.live('db'))[0]!;
      b.t += 100;
      await b.observe(home, cur.id, 'exited', 1);
      await b.settle(all);
      b.t += 1_000 * 2 ** i; // past the crash backoff (1, 2, 4 s: docs/ordering.md), within the node leases
      await b.settle(all);
      const next = (await b.live('db'))[0]!;
      expect(next.id).not.toBe(cur.id);
      expect(await placementOf(b, next.id)).toBe(home);
    }
    const placedWhy = await why(b.store, 'replica', (await b.live('db'))[0]!.id);
    expect(placedWhy.history[0]!.decision.reasons[0]).toBe(`its volume data is held on ${home}`);
  });

  test('waits for the volume node when it is full (CCA-E0420), rather than starting empty elsewhere', async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply(db({ resources: { cpuMillis: 3_000 }, placement: { prefer: [{ constraint: { attribute: 'node', op: 'in', values: ['n1'] }, weight: 10 }] } } as ServiceSpecInput));
    await b.settle(all);
    const first = (await b.live('db'))[0]!;
    expect(await placementOf(b, first.id)).toBe('n1');
    // Another service wants n1 and waits there (older than the db's replacement-to-be).
    await b.apply({ name: 'hog', image: 'web:1', replicas: 1, resources: { cpuMillis: 2_000 }, placement: { require: [{ attribute: 'node', op: 'in', values: ['n1'] }] } } as ServiceSpecInput);
    await b.settle(all);
    expect(await placementOf(b, (await b.live('hog'))[0]!.id)).toBeUndefined();
    b.t += 100;
    await b.observe('n1', first.id, 'exited', 1);
    await b.settle(all);
    b.t += 2_000; // past the crash backoff
    await b.settle(all);
    expect(await placementOf(b, (await b.live('hog'))[0]!.id)).toBe('n1');
    const replacement = (await b.live('db'))[0]!;
    expect(replacement.id).not.toBe(first.id);
    expect(await placementOf(b, replacement.id)).toBeUndefined(); // n2 has room, but not its data
    const w = await why(b.store, 'replica', replacement.id);
    expect(w.history[0]!.decision.action).toBe('pending');
    expect(w.history[0]!.decision.reasons.join(' ')).toContain('CCA-E0420');
  });
});

describe('node controller: stateful replicas', () => {
  test('on lease expiry a stateless replica is replaced, a stateful one is held with a decision saying why', async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply(db({ placement: { require: [{ attribute: 'node', op: 'in', values: ['n1'] }] } } as ServiceSpecInput));
    await b.apply({ name: 'web', image: 'web:1', replicas: 1, placement: { require: [{ attribute: 'node', op: 'in', values: ['n1'] }] } } as ServiceSpecInput);
    await b.settle(all);
    const dbId = (await b.live('db'))[0]!.id;
    const webId = (await b.live('web'))[0]!.id;
    await b.store.revokeLease(b.leases.get('n1')!);
    await b.settle(all);
    b.t += 60_000; // far past the grace
    await b.settle(all);
    expect((await b.live('web')).map((r) => r.id)).not.toContain(webId);
    expect((await b.live('db')).map((r) => r.id)).toEqual([dbId]);
    expect(await lostOf(b, 'n1', dbId)).toBeUndefined();
    const answer = await why(b.store, 'replica', dbId);
    expect(answer.history[0]!.decision.action).toBe('held: waiting for fencing proof of node n1');
    expect(answer.history[0]!.decision.reasons.join(' ')).toContain('CCA-E0419');
    expect(answer.complete).toBe(true);
    // Held means held: more time and more steps change nothing.
    const rev = await b.store.revision();
    b.t += 600_000;
    await b.settle(all);
    expect(await b.store.revision()).toBe(rev);
  });

  test('operator-fence: a fence of the lost tenure is the proof; the replacement cites it', async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply(db({ placement: { prefer: [{ constraint: { attribute: 'node', op: 'in', values: ['n1'] }, weight: 10 }] } } as ServiceSpecInput));
    await b.settle(all);
    const dbId = (await b.live('db'))[0]!.id;
    expect(await placementOf(b, dbId)).toBe('n1');
    const tenure = (await b.assignments('n1'))[0]!.tenure;
    await b.store.revokeLease(b.leases.get('n1')!);
    b.t += 5_000;
    await b.settle(all);
    // A fence of an older tenure proves nothing about this one.
    await b.store.put(buildKey('fence', 'n1'), encodeFact('fence', { node: 'n1', tenure: tenure - 1, assertedBy: 'admin', at: b.t }));
    await b.settle(all);
    expect((await b.live('db')).map((r) => r.id)).toEqual([dbId]);
    await b.store.put(buildKey('fence', 'n1'), encodeFact('fence', { node: 'n1', tenure, assertedBy: 'admin', at: b.t }));
    await b.settle(all);
    const live = await b.live('db');
    expect(live).toHaveLength(1);
    expect(live[0]!.id).not.toBe(dbId);
    expect(await placementOf(b, live[0]!.id)).toBe('n2'); // n1 is not ready: a fresh volume on n2
    const answer = await why(b.store, 'replica', live[0]!.id);
    expect(answer.complete).toBe(true);
    expect(answer.chain.map((l) => l.decision.action)).toContain('lost with node n1 (proof: operator-fence)');
    expect(answer.terminal?.fact).toBe(buildKey('fence', 'n1'));
  });

  test('node-confirmed: the node returns under a new tenure and reports the replica stopped; the replacement goes back there', async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply(db({ placement: { prefer: [{ constraint: { attribute: 'node', op: 'in', values: ['n1'] }, weight: 10 }] } } as ServiceSpecInput));
    await b.settle(all);
    const dbId = (await b.live('db'))[0]!.id;
    await b.store.revokeLease(b.leases.get('n1')!);
    b.t += 5_000;
    await b.settle(all);
    b.t += 1_000;
    const tenure = await b.register('n1', 'a');
    await b.settle(all);
    expect((await b.fact('nodeStatus', 'n1'))!.state).toBe('ready'); // a held replica does not keep its node out
    expect((await b.live('db')).map((r) => r.id)).toEqual([dbId]); // not confirmed yet: still held
    const held = await why(b.store, 'replica', dbId);
    expect(held.history[0]!.decision.reasons[0]).toContain('returned under tenure');
    // A report that it still runs is no proof; a report that it stopped is.
    await b.observe('n1', dbId, 'running', undefined, tenure);
    b.t += 1_000;
    await b.settle(all);
    expect((await b.live('db')).map((r) => r.id)).toEqual([dbId]);
    await b.observe('n1', dbId, 'exited', 143, tenure);
    b.t += 1_000;
    await b.settle(all);
    const live = await b.live('db');
    expect(live[0]!.id).not.toBe(dbId);
    expect(await placementOf(b, live[0]!.id)).toBe('n1');
    const answer = await why(b.store, 'replica', live[0]!.id);
    expect(answer.chain.map((l) => l.decision.action)).toContain('lost with node n1 (proof: node-confirmed)');
  });
});

describe('fence API', () => {
  test('POST /v1/nodes/{node}/fence: unknown node, ready node, missing confirm, then the fence of a lost node', async () => {
    const { store, call } = await securedApp();
    const unknown = await call('POST', '/v1/nodes/ghost/fence', { token: ADMIN, json: { confirm: true } });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('CCA-E0619');
    const { id } = await store.grantLease(10);
    const reg = await store.put(buildKey('node', 'n1'), encodeFact('node', { name: 'n1', zone: 'a', capacity: { cpuMillis: 1000, memoryBytes: 1 << 30 } }), { lease: id });
    await store.put(buildKey('nodeStatus', 'n1'), encodeFact('nodeStatus', { node: 'n1', tenure: reg.revision, state: 'ready', since: 0 }));
    const ready = await call('POST', '/v1/nodes/n1/fence', { token: ADMIN, json: { confirm: true } });
    expect(((await ready.json()) as { error: { code: string } }).error.code).toBe('CCA-E0618');
    const unconfirmed = await call('POST', '/v1/nodes/n1/fence', { token: ADMIN, json: {} });
    expect(((await unconfirmed.json()) as { error: { code: string } }).error.code).toBe('CCA-E0603');
    const anonymous = await call('POST', '/v1/nodes/n1/fence', { json: { confirm: true } });
    expect(anonymous.status).toBe(401);
    await store.revokeLease(id);
    const ok = await call('POST', '/v1/nodes/n1/fence', { token: ADMIN, json: { confirm: true } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ fenced: 'n1', tenure: reg.revision });
    const f = await store.get(buildKey('fence', 'n1'));
    expect(decodeFact('fence', f!.key, f!.value)).toMatchObject({ node: 'n1', tenure: reg.revision });
  });
});
