import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { Observation } from '../../core/model/facts.js';
import { BACKOFF, backoffDelay, formatDelay, nextAttempt } from '../../jobs/controllers/backoff.js';
import { auditor, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { listFacts } from '../../jobs/facts.js';
import { why } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const all = [replicaController, scheduler, node, auditor];

async function cluster(nodes: [string, string][] = [['n1', 'a'], ['n2', 'b']]) {
  const b = new Bench();
  for (const [n, z] of nodes) await b.register(n, z);
  await b.settle(all);
  return b;
}

/** What an agent reports when a replica's init step failed. */
async function initFailed(b: Bench, nodeName: string, replica: string, step: string, exitCode: number, extra: Partial<Observation['init']> = {}) {
  const tenure = (await b.store.get(buildKey('node', nodeName)))!.createRevision;
  const service = replica.slice(0, -9);
  await b.store.put(
    buildKey('observed', nodeName, replica),
    encodeFact('observed', { replica, service, node: nodeName, tenure, state: 'failed', exitCode, init: { step, state: 'failed', exitCode, tail: 'no database\n', ...extra }, at: b.t }),
  );
}

/** Move the clock, the agents keeping their leases alive meanwhile. */
async function advance(b: Bench, to: number) {
  while (b.t < to) {
    b.t = Math.min(to, b.t + 5_000);
    for (const id of b.leases.values()) await b.store.keepAlive(id);
  }
}

async function placement(b: Bench, replica: string) {
  const kv = await b.store.get(buildKey('placement', replica));
  return kv ? decodeFact('placement', kv.key, kv.value) : undefined;
}

async function latestDecision(b: Bench, replica: string) {
  const r = await b.store.range({ prefix: prefixOf('decision', 'replica', replica), reverse: true, limit: 1 });
  const kv = r.kvs[0]!;
  return decodeFact('decision', kv.key, kv.value);
}

/** Every step of every controller once; returns the scheduler's wakeup. */
async function round(b: Bench) {
  let wake: number | undefined;
  for (const c of all) {
    for (const s of (await c.subjects?.(b.store)) ?? [undefined]) {
      const w = await b.step(c, s);
      if (c === scheduler) wake = w.at;
    }
  }
  return wake;
}

describe('backoff math', () => {
  test('1 s doubling to a 5 min cap; a failure after 10 min placed counts as a first failure', () => {
    expect([0, 1, 2, 3, 4, 8, 9, 10, 50, 10_000].map(backoffDelay)).toEqual([0, 1_000, 2_000, 4_000, 8_000, 128_000, 256_000, 300_000, 300_000, 300_000]);
    expect(nextAttempt(0, 500)).toBe(1);
    expect(nextAttempt(4, BACKOFF.resetAfterMs - 1)).toBe(5);
    expect(nextAttempt(4, BACKOFF.resetAfterMs)).toBe(1);
    expect([1_000, 8_000, 61_000, 120_000, 300_000].map(formatDelay)).toEqual(['1 s', '8 s', '1 min 1 s', '2 min', '5 min']);
  });
});

describe('init failure backoff (state in the store)', () => {
  test('each replacement of a failing replica waits twice as long; the hold is a pending decision with the failure; the scheduler wakes at the end', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'api', image: 'web:1', init: [{ name: 'migrate', command: ['migrate'] }] });
    await b.settle(all);
    let [r] = await b.live('api');
    expect(r!.attempt ?? 0).toBe(0);
    const delays: number[] = [];
    for (let failure = 1; failure <= 4; failure++) {
      const failedAt = b.t;
      await initFailed(b, 'n1', r!.id, 'migrate', 1);
      await b.settle(all);
      const [next] = await b.live('api');
      expect(next!.id).not.toBe(r!.id);
      expect(next).toMatchObject({ attempt: failure, failure: 'init step migrate failed (code 1)', notBefore: failedAt + backoffDelay(failure) });
      delays.push(next!.notBefore! - failedAt);
      // Held: not placed, a pending decision says why, and the scheduler asks to wake at notBefore.
      expect(await placement(b, next!.id)).toBeUndefined();
      const d = await latestDecision(b, next!.id);
      expect(d.action).toBe('pending');
      expect(d.reasons[0]).toBe(`backing off after init step migrate failed (code 1), retry in ${formatDelay(backoffDelay(failure))} (failure ${failure} in a row)`);
      expect(d.reasons[1]).toMatch(/^CCA-E0416 /);
      expect(await b.step(scheduler)).toEqual({ at: next!.notBefore });
      // A converged hold writes nothing.
      const rev = await b.store.revision();
      await round(b);
      expect(await b.store.revision()).toBe(rev);
      await advance(b, next!.notBefore! - 1);
      await b.settle(all);
      expect(await placement(b, next!.id)).toBeUndefined();
      await advance(b, next!.notBefore!);
      await b.settle(all);
      expect((await placement(b, next!.id))?.node).toBe('n1');
      r = next;
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000]);
    // The retired replica's decision names the step; `why` on the replacement reaches the observation.
    const answer = await why(b.store, 'replica', r!.id);
    expect(answer.complete).toBe(true);
    expect(JSON.stringify(answer)).toContain('init step migrate failed (code 1)');
  });

  test('a replica that stayed placed 10 min starts the count again; a timed-out step says so; node loss is no failure', async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply({ name: 'api', image: 'web:1', init: [{ name: 'migrate', command: ['migrate'] }] });
    await b.settle(all);
    const [r0] = await b.live('api');
    await initFailed(b, (await placement(b, r0!.id))!.node, r0!.id, 'migrate', 137, { timedOut: true });
    await b.settle(all);
    const [r1] = await b.live('api');
    expect(r1).toMatchObject({ attempt: 1, failure: 'init step migrate timed out' });
    await advance(b, r1!.notBefore!);
    await b.settle(all);
    await b.observe((await placement(b, r1!.id))!.node, r1!.id, 'exited', 3);
    await b.settle(all);
    const [r2] = await b.live('api');
    expect(r2).toMatchObject({ attempt: 2, failure: 'exited with code 3' });
    await advance(b, r2!.notBefore!);
    await b.settle(all);
    await advance(b, b.t + BACKOFF.resetAfterMs);
    await b.observe((await placement(b, r2!.id))!.node, r2!.id, 'exited', 3);
    await b.settle(all);
    const [r3] = await b.live('api');
    expect(r3).toMatchObject({ attempt: 1, notBefore: b.t + 1_000 });
    await advance(b, r3!.notBefore!);
    await b.settle(all);
    // The node goes: its replica is replaced at once, with no backoff and the count cleared.
    const lostNode = (await placement(b, r3!.id))!.node;
    await b.store.revokeLease(b.leases.get(lostNode)!);
    b.leases.delete(lostNode);
    await b.settle(all);
    await advance(b, b.t + 2_000);
    await b.settle(all);
    const [r4] = await b.live('api');
    expect(r4!.id).not.toBe(r3!.id);
    expect(r4!.attempt ?? 0).toBe(0);
    expect(r4!.notBefore).toBeUndefined();
    expect((await placement(b, r4!.id))?.node).not.toBe(lostNode);
  });
});

async function endpoints(b: Bench, service: string, ready: string[]) {
  await b.store.put(
    buildKey('endpoints', service),
    encodeFact('endpoints', { service, endpoints: ready.map((replica) => ({ replica, node: 'n1', address: '10.0.0.1', ports: { http: 80 } })), at: b.t }),
  );
}

describe('after: a service is placed once its dependencies have their desired count ready', () => {
  test('api waits for db: pending says n/m ready; released by the endpoints, which the placement compares and cites', async () => {
    const b = await cluster();
    await b.apply({ name: 'db', image: 'web:1', replicas: 2 });
    await b.apply({ name: 'api', image: 'web:1', replicas: 2, after: ['db'] });
    await b.settle(all);
    const db = await b.live('db');
    const api = await b.live('api');
    expect(db.every((r) => r.notBefore === undefined)).toBe(true);
    for (const r of db) expect(await placement(b, r.id)).toBeDefined();
    for (const r of api) {
      expect(await placement(b, r.id)).toBeUndefined();
      expect((await latestDecision(b, r.id)).reasons[0]).toBe('waiting for db: 0/2 ready');
    }
    b.t += 1_000;
    await endpoints(b, 'db', [db[0]!.id]);
    await b.settle(all);
    for (const r of api) expect((await latestDecision(b, r.id)).reasons).toEqual(['waiting for db: 1/2 ready', expect.stringMatching(/^CCA-E0417 .*1\/2 replicas ready/)]);
    // Converged while held: nothing is written.
    const rev = await b.store.revision();
    await round(b);
    expect(await b.store.revision()).toBe(rev);
    await endpoints(b, 'db', [db[0]!.id, db[1]!.id]);
    await b.settle(all);
    for (const r of api) {
      expect(await placement(b, r.id)).toBeDefined();
      const d = await latestDecision(b, r.id);
      expect(d.action).toMatch(/^placed on /);
      expect(d.reasons).toContain('after db: 2/2 ready');
      expect(d.evidence.map((e) => e.key)).toContain(buildKey('endpoints', 'db'));
    }
  });

  test('the placement compares the endpoints: a stale plan (endpoints changed since read) writes nothing', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'db', image: 'web:1', replicas: 1 });
    await b.apply({ name: 'api', image: 'web:1', after: ['db'] });
    await b.settle(all);
    const [db] = await b.live('db');
    await endpoints(b, 'db', [db!.id]);
    // Drop db's endpoint between the scheduler's reads and its txn.
    const store = b.store;
    const txn = store.txn.bind(store);
    let raced = false;
    store.txn = async (req) => {
      if (!raced && req.success.some((op) => 'put' in op && op.put.key.startsWith(prefixOf('placement')))) {
        raced = true;
        await endpoints(b, 'db', []);
      }
      return txn(req);
    };
    await b.step(scheduler);
    store.txn = txn;
    expect(raced).toBe(true);
    const [api] = await b.live('api');
    expect(await placement(b, api!.id)).toBeUndefined();
    await b.settle(all);
    expect(await placement(b, api!.id)).toBeUndefined();
    expect((await latestDecision(b, api!.id)).reasons[0]).toBe('waiting for db: 0/1 ready');
  });

  test('an autoscaled dependency counts its intent; after gates starting, not running; a deleted dependency holds new replicas with a coded reason', async () => {
    const b = await cluster();
    await b.apply({ name: 'db', image: 'web:1', replicas: 1, autoscale: { min: 1, max: 5, targetCpuPercent: 70 } });
    await b.apply({ name: 'api', image: 'web:1', after: ['db'] });
    await b.store.put(buildKey('autoscale', 'db'), encodeFact('autoscale', { service: 'db', desired: 3, observedCpuPercent: 90, stableSince: b.t, at: b.t }));
    await b.settle(all);
    const db = await b.live('db');
    b.t += 1_000;
    await endpoints(b, 'db', db.map((r) => r.id).slice(0, 1));
    await b.settle(all);
    const [api] = await b.live('api');
    expect((await latestDecision(b, api!.id)).reasons[0]).toBe('waiting for db: 1/3 ready');
    await endpoints(b, 'db', ['db-a', 'db-b', 'db-c']);
    await b.settle(all);
    expect(await placement(b, api!.id)).toBeDefined();
    // db drops to 0 ready: the placed api replica stays.
    await endpoints(b, 'db', []);
    await b.settle(all);
    expect((await b.live('api')).map((r) => r.id)).toEqual([api!.id]);
    expect(await placement(b, api!.id)).toBeDefined();
    // db deleted: api's replacement after a crash is held, and says why.
    await b.store.delete(buildKey('service', 'db'));
    await b.store.delete(buildKey('endpoints', 'db'));
    await b.settle(all);
    await b.observe((await placement(b, api!.id))!.node, api!.id, 'exited', 1);
    await b.settle(all);
    const [next] = await b.live('api');
    b.t = next!.notBefore!;
    await b.settle(all);
    expect(await placement(b, next!.id)).toBeUndefined();
    const d = await latestDecision(b, next!.id);
    expect(d.reasons).toEqual(['waiting for db: no service db exists', expect.stringMatching(/^CCA-E0418 /)]);
  });
});
