import { describe, expect, test } from 'vitest';
import { CcaError } from '../../core/diagnostics/error.js';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { Observation } from '../../core/model/facts.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import { auditor, nodeController, replicaController, rolloutController, scheduler } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { nodeAction } from '../../handlers/routes/nodeops.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 60_000 });
const all = [replicaController, scheduler, node, auditor, rolloutController];
const Mi = 1024 ** 2;

/** Agents played by the test: every assignment runs (ready) at once; a stop is carried out at once unless `holdStops`. */
async function agents(b: Bench, holdStops = false): Promise<void> {
  for (const a of await b.assignments()) {
    const nodeKv = await b.store.get(buildKey('node', a.node));
    if (!nodeKv || nodeKv.createRevision !== a.tenure) continue;
    if (a.desired === 'stop' && holdStops) continue;
    const key = buildKey('observed', a.node, a.replica);
    const cur = await b.store.get(key);
    const state = a.desired === 'stop' ? 'exited' : 'running';
    if (cur && decodeFact('observed', key, cur.value).state === state) continue;
    const obs: Observation = {
      replica: a.replica, service: a.service, node: a.node, tenure: a.tenure, state,
      ...(state === 'exited' ? { exitCode: 143 } : {}),
      restarts: 0, health: { liveness: 'unknown', readiness: state === 'running' ? 'passing' : 'unknown' }, image: a.spec.image, at: b.t,
    };
    await b.store.put(key, encodeFact('observed', obs));
  }
}

/** Controllers and agents until neither writes; `check` runs after every single step. */
async function converge(b: Bench, check?: () => Promise<void>, holdStops = false): Promise<void> {
  for (let i = 0; i < 80; i++) {
    b.t += 10; // decisions are named by time: a new round is a new instant
    for (const id of b.leases.values()) await b.store.keepAlive(id);
    const before = await b.store.revision();
    for (const c of all) for (const s of (await c.subjects?.(b.store)) ?? [undefined]) {
      await b.step(c, s);
      await check?.();
    }
    await agents(b, holdStops);
    await check?.();
    if ((await b.store.revision()) === before) return;
  }
  throw new Error('did not converge');
}

async function readyCount(b: Bench, service = 'web'): Promise<number> {
  const live = new Set((await b.live(service)).map((r) => r.id));
  const obs = await listFacts(b.store, 'observed', prefixOf('observed'));
  return obs.filter((o) => live.has(o.value.replica) && o.value.state === 'running').length;
}

async function cluster(names: string[]) {
  const b = new Bench();
  for (const [i, n] of names.entries()) await b.register(n, String.fromCharCode(97 + i));
  await converge(b);
  return b;
}

const web = (extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'web', image: 'web:1', replicas: 3, resources: { cpuMillis: 100 },
  update: { maxSurge: 1, maxUnavailable: 0, progressDeadlineMs: 60_000 }, ...extra,
});

const codeOf = async (p: Promise<unknown>) => p.then(() => 'none', (e: unknown) => (e instanceof CcaError ? e.code : String(e)));

describe('cordon', () => {
  test('a cordoned node takes no new placements, keeps what it runs, and takes placements again when uncordoned', async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web({ replicas: 2 }));
    await converge(b);
    expect((await b.assignments('n1')).length).toBe(1);
    const r = await nodeAction(b.store, 'n1', 'cordon', 'alice', b.t);
    expect(r.decision).toContain('/decisions/node/n1/');
    await b.apply(web({ replicas: 4 }));
    await converge(b);
    expect((await b.assignments('n1')).length).toBe(1); // stays, gets nothing new
    expect((await b.assignments('n2')).length).toBe(3);
    await b.apply({ name: 'only1', image: 'web:1', replicas: 1, placement: { require: [{ attribute: 'node', op: '==', values: ['n1'] }] } });
    await converge(b);
    const pending = await why(b.store, 'replica', (await b.live('only1'))[0]!.id);
    expect(pending.history[0]!.decision.reasons.join(' ')).toContain('may not use 1 cordoned or draining node(s)');
    await nodeAction(b.store, 'n1', 'uncordon', 'alice', b.t);
    await converge(b);
    expect((await b.assignments('n1')).map((a) => a.service)).toContain('only1');
    const n1 = await why(b.store, 'node', 'n1');
    expect(n1.history.map((l) => l.decision.action)).toEqual(expect.arrayContaining(['cordon node n1', 'uncordon node n1']));
  });

  test('a placement planned before a cordon was written commits nothing (the cordon is in its read set)', async () => {
    const b = await cluster(['n1']);
    await b.apply(web({ replicas: 1 }));
    await b.step(replicaController, 'web');
    // The scheduler reads the view, then the cordon lands before its txn: a store that
    // writes the cordon just before the scheduler's first txn plays that race.
    const txn = b.store.txn.bind(b.store);
    let raced = false;
    b.store.txn = async (req) => {
      if (!raced && req.success.some((op) => 'put' in op && op.put.key.startsWith('/assigned/'))) {
        raced = true;
        await nodeAction(b.store, 'n1', 'cordon', 'alice', b.t);
      }
      return txn(req);
    };
    await b.step(scheduler);
    b.store.txn = txn;
    expect(raced).toBe(true);
    expect(await b.assignments('n1')).toHaveLength(0);
  });
});

describe('what a placement compares', () => {
  test('a node re-registered within its tenure with less capacity after the plan: the placement commits nothing', async () => {
    const b = await cluster(['n1']);
    await b.apply(web({ replicas: 1 }));
    await b.step(replicaController, 'web');
    const key = buildKey('node', 'n1');
    const txn = b.store.txn.bind(b.store);
    let raced = false;
    b.store.txn = async (req) => {
      if (!raced && req.success.some((op) => 'put' in op && op.put.key.startsWith('/assigned/'))) {
        raced = true;
        const kv = (await b.store.get(key))!;
        const rec = decodeFact('node', key, kv.value);
        await b.store.put(key, encodeFact('node', { ...rec, capacity: { ...rec.capacity, cpuMillis: 50 } }), { lease: kv.lease });
      }
      return txn(req);
    };
    await b.step(scheduler);
    b.store.txn = txn;
    expect(raced).toBe(true);
    expect(await b.assignments('n1')).toHaveLength(0);
  });
});

describe('drain', () => {
  test('moves every replica off the node with never fewer ready than the update limits allow', async () => {
    const b = await cluster(['n1', 'n2', 'n3', 'n4']);
    await b.apply(web({ replicas: 3, placement: { require: [{ attribute: 'node', op: '!=', values: ['n4'] }] } }));
    await converge(b);
    expect(await readyCount(b)).toBe(3);
    await b.apply(web({ replicas: 3 })); // n4 is open now: room for the drained replica
    await converge(b);
    const before = (await b.assignments('n1')).filter((a) => a.service === 'web');
    expect(before).toHaveLength(1);
    let lowest = Infinity;
    await nodeAction(b.store, 'n1', 'drain', 'alice', b.t);
    await converge(b, async () => {
      lowest = Math.min(lowest, await readyCount(b));
    });
    expect(lowest).toBeGreaterThanOrEqual(3); // max_unavailable 0
    expect((await b.assignments('n1')).filter((a) => a.service === 'web')).toHaveLength(0);
    expect(await readyCount(b)).toBe(3);
    const moved = await why(b.store, 'replica', before[0]!.replica);
    expect(moved.history.map((l) => l.decision.action).join(' | ')).toContain('stopping: drain of node n1');
  });

  test('with max_unavailable 1 and no surge it stops one at a time', async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web({ replicas: 4, update: { maxSurge: 0, maxUnavailable: 1, progressDeadlineMs: 60_000 } }));
    await converge(b);
    expect((await b.assignments('n1')).length).toBe(2);
    let lowest = Infinity;
    await nodeAction(b.store, 'n1', 'drain', 'alice', b.t);
    await converge(b, async () => {
      lowest = Math.min(lowest, await readyCount(b));
    });
    expect(lowest).toBe(3);
    expect(await b.assignments('n1')).toHaveLength(0);
    expect(await readyCount(b)).toBe(4);
  });

  test('a drained stateful replica is replaced only after its node reports it stopped, never on the grace alone', async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web({ replicas: 1, stopGraceMs: 1_000, volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data' }], placement: { require: [{ attribute: 'node', op: '==', values: ['n1'] }] } }));
    await converge(b);
    await b.apply(web({ replicas: 1, stopGraceMs: 1_000, volumes: [{ name: 'data', sizeBytes: 64 * Mi, mountPath: '/data' }] }));
    await converge(b);
    const old = (await b.assignments('n1'))[0]!;
    await nodeAction(b.store, 'n1', 'drain', 'alice', b.t);
    await converge(b, undefined, true);
    b.t += 5_000; // well past the grace
    for (const id of b.leases.values()) await b.store.keepAlive(id);
    await converge(b, undefined, true);
    expect((await b.replicas('web')).find((r) => r.id === old.replica)!.retired).toBe(false);
    expect(await b.assignments('n2')).toHaveLength(0);
    await converge(b); // n1 reports the stop
    expect(await b.assignments('n1')).toHaveLength(0);
    expect(await b.assignments('n2')).toHaveLength(1);
  });
});

describe('remove and repair', () => {
  test('remove refuses a registered node, and forgets a lost one at once, its replicas replaced', async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web({ replicas: 2 }));
    await converge(b);
    expect(await codeOf(nodeAction(b.store, 'n1', 'remove', 'alice', b.t))).toBe('CCA-E0680');
    expect(await codeOf(nodeAction(b.store, 'nope', 'remove', 'alice', b.t))).toBe('CCA-E0619');
    await b.store.revokeLease(b.leases.get('n1')!);
    b.leases.delete('n1');
    await converge(b);
    expect(await b.assignments('n1')).toHaveLength(1); // within the 60 s grace: kept
    await nodeAction(b.store, 'n1', 'remove', 'alice', b.t);
    await converge(b);
    expect(await b.assignments('n1')).toHaveLength(0);
    expect(await b.assignments('n2')).toHaveLength(2);
    expect(await b.store.get(buildKey('nodeStatus', 'n1'))).toBeNull();
    expect(await b.store.get(buildKey('allocation', 'n1'))).toBeNull();
    const n1 = await why(b.store, 'node', 'n1');
    expect(n1.history.map((l) => l.decision.action)).toEqual(expect.arrayContaining(['remove node n1', 'removed', 'forgot allocation']));
  });

  test('repair asks the scheduler to rebuild an audited allocation; none is refused with a code', async () => {
    const b = await cluster(['n1']);
    await b.apply(web({ replicas: 1 }));
    await converge(b);
    expect(await codeOf(nodeAction(b.store, 'n1', 'repair', 'alice', b.t))).toBe('CCA-E0681');
    const kv = (await b.store.get(buildKey('allocation', 'n1')))!;
    const alloc = decodeFact('allocation', kv.key, kv.value);
    await b.store.put(kv.key, encodeFact('allocation', { ...alloc, used: { ...alloc.used, cpuMillis: 1 } }));
    await converge(b);
    expect((await b.fact('audit', 'n1'))!.open).toBe(true);
    await nodeAction(b.store, 'n1', 'repair', 'alice', b.t);
    await converge(b);
    expect((await b.fact('audit', 'n1'))!.open).toBe(false);
    const n1 = await why(b.store, 'node', 'n1');
    expect(n1.history.map((l) => l.decision.action)).toEqual(expect.arrayContaining(['asked the scheduler to repair node n1', 'repaired allocation', 'audit finding closed']));
  });
});

describe('a condition the agent reports on its node (disk full, CCA-E0570)', () => {
  test('no new placements while it holds, what runs stays, placements again once it clears', async () => {
    const b = await cluster(['n1', 'n2']);
    await b.apply(web({ replicas: 2 }));
    await converge(b);
    expect((await b.assignments('n1')).length).toBe(1);
    // The agent registers again under its lease (same tenure) with the condition, as agent/core/lease.ts does.
    const key = buildKey('node', 'n1');
    const record = decodeFact('node', key, (await b.store.get(key))!.value);
    const condition = { kind: 'disk-full' as const, code: 'CCA-E0570', message: 'node n1 cannot write to its state directory', since: b.t };
    await b.store.put(key, encodeFact('node', { ...record, conditions: [condition] }), { lease: b.leases.get('n1')! });
    await b.apply(web({ replicas: 4 }));
    await converge(b);
    expect((await b.assignments('n1')).length).toBe(1);
    expect((await b.assignments('n2')).length).toBe(3);
    await b.apply({ name: 'only1', image: 'web:1', replicas: 1, placement: { require: [{ attribute: 'node', op: '==', values: ['n1'] }] } });
    await converge(b);
    const pending = await why(b.store, 'replica', (await b.live('only1'))[0]!.id);
    expect(pending.history[0]!.decision.reasons.join(' ')).toContain('1 node excluded by disk full (CCA-E0570)');
    await b.store.put(key, encodeFact('node', { ...record, conditions: [] }), { lease: b.leases.get('n1')! });
    await converge(b);
    expect((await b.assignments('n1')).map((a) => a.service)).toContain('only1');
  });
});
