import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import { historyWindowMs, QUORUM, renewingWithinMs, settledFrom, type Membership } from '../../core/model/quorum.js';
import { auditor, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { endpointController } from '../../jobs/controllers/endpoints.js';
import { nextMembership, versionWithoutMajority, type Renewal } from '../../jobs/controllers/node-quorum.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { Bench } from './harness.js';

const TTL = 30;
const all = [replicaController, scheduler, nodeController({ lostGraceMs: 1_000 }), auditor, endpointController];
const Gi = 1024 ** 3;

/** Registration as the API does it: a backstop store lease, the agent's TTL in the record. */
async function register(b: Bench, name: string): Promise<number> {
  const { id } = await b.store.grantLease(QUORUM.backstopSeconds);
  b.leases.set(name, id);
  const r = await b.store.put(buildKey('node', name), encodeFact('node', { name, zone: 'a', capacity: { cpuMillis: 4_000, memoryBytes: 8 * Gi }, images: { 'web:1': 'sha256:1' }, leaseTtlSeconds: TTL }), { lease: id });
  return r.revision;
}

async function cluster(names: string[], replicas = 0): Promise<Bench> {
  const b = new Bench();
  for (const n of names) await register(b, n);
  await b.settle(all);
  if (replicas > 0) {
    await b.apply({ name: 'web', image: 'web:1', replicas });
    await b.settle(all);
  }
  return b;
}

/** Time passes in keepalive-sized steps; `alive` nodes renew at each. */
async function pass(b: Bench, ms: number, alive: string[]): Promise<void> {
  for (let done = 0; done < ms; done += 5_000) {
    b.t += Math.min(5_000, ms - done);
    for (const n of alive) await b.store.keepAlive(b.leases.get(n)!);
    await b.settle(all, 40);
  }
}

const status = async (b: Bench, n: string) => (await b.fact('nodeStatus', n))?.state;
const membership = async (b: Bench): Promise<Membership> => {
  const kv = (await b.store.get(buildKey('membership', 'nodes')))!;
  return decodeFact('membership', kv.key, kv.value);
};
const liveIds = async (b: Bench) => (await b.live('web')).map((r) => r.id).sort();

describe('node controller: the quorum rule', () => {
  test('one node cut off: expired after its TTL while the majority renews; its replicas are replaced only after the quorum grace', async () => {
    const b = await cluster(['n1', 'n2', 'n3'], 3);
    const before = await liveIds(b);
    const onN1 = (await b.assignments('n1')).map((a) => a.replica);
    await pass(b, TTL * 1000 - 5_000, ['n2', 'n3']);
    expect(await status(b, 'n1')).toBe('ready');
    await pass(b, 5_000 + QUORUM.granularityMs * 2, ['n2', 'n3']);
    expect(await status(b, 'n1')).toBe('lost');
    expect(await b.store.get(buildKey('node', 'n1'))).toBeFalsy();
    // Not yet replaced: the agent may run F + check + kill past the expiry.
    expect(await liveIds(b)).toEqual(before);
    b.t += QUORUM.lostGraceMs - 1;
    await b.settle(all, 40);
    expect(await liveIds(b)).toEqual(before);
    b.t += 1;
    for (const n of ['n2', 'n3']) await b.store.keepAlive(b.leases.get(n)!);
    await b.settle(all, 40);
    const after = await liveIds(b);
    expect(after).toHaveLength(3);
    for (const r of onN1) expect(after).not.toContain(r);
    const answer = await why(b.store, 'node', 'n1');
    expect(answer.chain[0]!.decision.action).toBe('expired');
  });

  test('the whole cluster silent (a control-plane outage): nothing expires or moves; when they renew again nothing restarts', async () => {
    const b = await cluster(['n1', 'n2', 'n3'], 3);
    for (const a of await b.assignments()) await b.observe(a.node, a.replica, 'running');
    await b.settle(all);
    const serving = async () => {
      const kv = await b.store.get(buildKey('endpoints', 'web'));
      return kv ? decodeFact('endpoints', kv.key, kv.value).endpoints.length : 0;
    };
    expect(await serving()).toBe(3);
    const before = await liveIds(b);
    const tenures = await Promise.all(['n1', 'n2', 'n3'].map(async (n) => (await b.store.get(buildKey('node', n)))!.createRevision));
    await pass(b, 5 * 60_000, []);
    for (const n of ['n1', 'n2', 'n3']) expect(await status(b, n)).toBe('unreachable');
    expect((await membership(b)).heldSince).toBeDefined();
    // The hold keeps the tenure and what it reported: traffic still goes to the replicas.
    expect(await serving()).toBe(3);
    expect(await liveIds(b)).toEqual(before);
    expect(await listFacts(b.store, 'lost', prefixOf('lost'))).toHaveLength(0);
    const held = await why(b.store, 'node', 'n2');
    expect(held.chain[0]!.decision.action).toBe('unreachable (hold)');
    expect(held.chain[0]!.decision.reasons.join(' ')).toContain('0 of the 3 members');
    await pass(b, 5_000, ['n1', 'n2', 'n3']);
    for (const n of ['n1', 'n2', 'n3']) expect(await status(b, n)).toBe('ready');
    expect(await Promise.all(['n1', 'n2', 'n3'].map(async (n) => (await b.store.get(buildKey('node', n)))!.createRevision))).toEqual(tenures);
    expect(await liveIds(b)).toEqual(before);
    expect((await membership(b)).liftedAt).toBeDefined();
  });

  test('the controller away longer than T: on its return a late renewer is held, not expired, until the returned members settled', async () => {
    const b = await cluster(['n1', 'n2', 'n3'], 3);
    const before = await liveIds(b);
    // The whole control plane away for 70 s: no renewal, no controller step.
    b.t += 70_000;
    // As the keepalive route does after a silence of R or more: the stamp first, then the renewal.
    const back = async (n: string) => {
      const kv = (await b.store.get(buildKey('node', n)))!;
      await b.store.put(kv.key, encodeFact('node', { ...decodeFact('node', kv.key, kv.value), renewingSince: b.t }), { lease: kv.lease });
      await b.store.keepAlive(b.leases.get(n)!);
    };
    await back('n1');
    await back('n2');
    const returnedAt = b.t;
    await b.settle(all, 40);
    expect(await status(b, 'n3')).toBe('unreachable');
    expect(await liveIds(b)).toEqual(before);
    const held = await why(b.store, 'node', 'n3');
    expect(held.chain[0]!.decision.reasons.join(' ')).toContain('0 of the 3 members');
    // n3 stays silent: expired once n1 and n2 have renewed for G (and the clock margin) since their return.
    await pass(b, settledFrom(returnedAt) - returnedAt - 5_000, ['n1', 'n2']);
    expect(await status(b, 'n3')).toBe('unreachable');
    await pass(b, 10_000, ['n1', 'n2']);
    expect(await status(b, 'n3')).toBe('lost');
  });

  test('a majority silent together: held; the renewing minority changes nothing', async () => {
    const b = await cluster(['n1', 'n2', 'n3', 'n4', 'n5'], 5);
    const before = await liveIds(b);
    await pass(b, 2 * 60_000, ['n4', 'n5']);
    for (const n of ['n1', 'n2', 'n3']) expect(await status(b, n)).toBe('unreachable');
    for (const n of ['n4', 'n5']) expect(await status(b, n)).toBe('ready');
    expect(await liveIds(b)).toEqual(before);
  });

  test('after the hold lifts, a node still silent gets a full TTL from the lift before it expires', async () => {
    const b = await cluster(['n1', 'n2', 'n3']);
    await pass(b, 60_000, []);
    expect(await status(b, 'n1')).toBe('unreachable');
    await pass(b, 5_000, ['n2', 'n3']);
    const lifted = (await membership(b)).liftedAt!;
    expect(lifted).toBe(b.t);
    await pass(b, TTL * 1000 - 5_000, ['n2', 'n3']);
    expect(await status(b, 'n1')).toBe('unreachable');
    await pass(b, 5_000, ['n2', 'n3']);
    expect(await status(b, 'n1')).toBe('lost');
  });

  test('a single node never expires itself out of its own cluster', async () => {
    const b = await cluster(['solo'], 1);
    const before = await liveIds(b);
    await pass(b, 3 * 60_000, []);
    expect(await status(b, 'solo')).toBe('unreachable');
    expect(await liveIds(b)).toEqual(before);
  });

  test('every membership version of the last W counts: an old majority that went silent holds expiry until W has passed', async () => {
    const b = await cluster(['n1', 'n2', 'n3']);
    // Four more join: version 2 has seven members, of whom n1 and n2 will fall silent.
    for (const n of ['n4', 'n5', 'n6', 'n7']) await register(b, n);
    await b.settle(all);
    const m = await membership(b);
    expect(m.versions.map((v) => v.members.length)).toEqual([3, 7]);
    const joined = m.versions[1]!.since;
    const alive = ['n3', 'n4', 'n5', 'n6', 'n7'];
    await pass(b, TTL * 1000 + 5_000, alive);
    // 5 of 7 renew, but only 1 of version 1's 3: n1 and n2 may hold version 1 and confirm each other's outage.
    expect(await status(b, 'n1')).toBe('unreachable');
    const w = historyWindowMs(TTL * 1000);
    await pass(b, joined + w - b.t - 1, alive);
    expect(await status(b, 'n1')).toBe('unreachable');
    await pass(b, 5_000, alive);
    expect(await status(b, 'n1')).toBe('lost');
    expect(await status(b, 'n2')).toBe('lost');
    // Version 1 aged out (dropped with the next change); the lost nodes left in version 3.
    expect((await membership(b)).versions.map((v) => v.members.length)).toEqual([7, 5]);
  });
});

describe('membership history (pure)', () => {
  const r = (silence: number): Renewal => ({ lease: 1, ttlMs: TTL * 1000, managed: true, silenceLower: silence, silenceUpper: silence });
  const members = (...names: string[]) => names.map((node) => ({ node, ttlSeconds: TTL }));

  test('a new version when the members change; superseded ones kept for W; the hold set and lifted', () => {
    const renewals = new Map([['a', r(0)], ['b', r(0)]]);
    const m1 = nextMembership(undefined, members('a', 'b'), renewals, 1_000)!;
    expect(m1.versions).toEqual([{ version: 1, since: 1_000, members: members('a', 'b') }]);
    expect(nextMembership(m1, members('a', 'b'), renewals, 2_000)).toBeUndefined();
    const m2 = nextMembership(m1, members('a', 'b', 'c'), renewals, 3_000)!;
    expect(m2.versions.map((v) => v.version)).toEqual([1, 2]);
    const w = historyWindowMs(TTL * 1000);
    // Time alone writes nothing (a converged system stays quiet); judging drops what is out of the window.
    expect(nextMembership(m2, members('a', 'b', 'c'), renewals, 3_001 + w)).toBeUndefined();
    expect(nextMembership(m2, members('a', 'b'), renewals, 3_001 + w)!.versions.map((v) => v.version)).toEqual([2, 3]);
    const silent = new Map([['a', r(renewingWithinMs(TTL * 1000))]]);
    expect(versionWithoutMajority(m2, silent, 4_000)?.version.version).toBe(1);
    expect(versionWithoutMajority(m2, silent, 3_000 + w)?.version.version).toBe(1);
    expect(versionWithoutMajority(m2, new Map([['a', r(0)], ['b', r(0)]]), 3_001 + w)).toBeUndefined();
    // Held only when a node is due to expire: silence alone is no decision.
    expect(nextMembership(m2, members('a', 'b', 'c'), silent, 4_000)).toBeUndefined();
    const due = new Map([['a', r(TTL * 1000)]]);
    const held = nextMembership(m2, members('a', 'b', 'c'), due, 4_000)!;
    expect(held.heldSince).toBe(4_000);
    const lifted = nextMembership(held, members('a', 'b', 'c'), new Map([['a', r(0)], ['b', r(0)]]), 5_000)!;
    expect(lifted).toMatchObject({ liftedAt: 5_000 });
    expect(lifted.heldSince).toBeUndefined();
  });

  test('older versions forbid an expiry only when their silent members are a majority of them: a cluster that formed one node at a time can lose a node at once', () => {
    const alive = new Map([['n1', r(0)], ['n2', r(0)]]);
    let m = nextMembership(undefined, members('n1'), alive, 1_000)!;
    m = nextMembership(m, members('n1', 'n3'), alive, 1_100)!;
    m = nextMembership(m, members('n1', 'n2', 'n3'), alive, 1_200)!;
    expect(m.versions.map((v) => v.members.length)).toEqual([1, 2, 3]);
    // n3 silent: {n1, n3} has one silent of two (no majority: n3 alone cannot confirm with that copy).
    expect(versionWithoutMajority(m, alive, 20_000)).toBeUndefined();
    // n1 silent: the first version is n1 alone, whose copy is its own majority: expiry is forbidden.
    expect(versionWithoutMajority(m, new Map([['n2', r(0)], ['n3', r(0)]]), 20_000)?.version.version).toBe(1);
    // The current version still needs a strict majority renewing: two of three silent holds.
    expect(versionWithoutMajority(m, new Map([['n1', r(0)]]), 20_000)?.version.version).toBe(3);
  });

  test('members back from a silence make no majority for an expiry until G after the server stamped their return', () => {
    let m = nextMembership(undefined, members('n1', 'n2', 'n3'), new Map(), 1_000)!;
    const back = (since: number): Renewal => ({ ...r(0), renewingSince: since });
    // The control plane returns at 100 s: n1 and n2 renewed at once, n3 (a late renewer) not yet.
    const returned = new Map([['n1', back(100_000)], ['n2', back(100_500)], ['n3', r(70_000)]]);
    expect(versionWithoutMajority(m, returned, 101_000)).toMatchObject({ settled: 0, version: { version: 1 } });
    expect(versionWithoutMajority(m, returned, settledFrom(100_500) - 1)).toMatchObject({ settled: 1 });
    expect(versionWithoutMajority(m, returned, settledFrom(100_500))).toBeUndefined();
  });
});
