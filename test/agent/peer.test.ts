import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { askMembers, askPeer } from '../../agent/peer/client.js';
import { PeerKeys, verifySignature } from '../../agent/peer/keys.js';
import { PEER_PATH } from '../../agent/peer/protocol.js';
import { PeerServer } from '../../agent/peer/server.js';
import { PeerQuorum } from '../../agent/peer/outage.js';
import { FENCE } from '../../agent/core/fence.js';
import { cannotReachAfterMs } from '../../core/model/quorum.js';
import { QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import { loopbackNetworks, parseCidr } from '../../core/model/peer-address.js';
import { tempDir } from './support.js';

/** Three agents' peer endpoints on loopback, each answering from the same membership copy. */
async function trio(reaches: Record<string, boolean>, opts: { maxConcurrent?: number } = {}) {
  const keys = Object.fromEntries(['a', 'b', 'c'].map((n) => [n, PeerKeys.generate()]));
  const copy: MembershipVersion = { version: 7, since: 0, members: [] };
  const servers: PeerServer[] = [];
  for (const n of ['a', 'b', 'c']) {
    const s = new PeerServer({ node: n, keys: keys[n]!, listen: '127.0.0.1:0', membership: () => copy, reaches: () => reaches[n]!, ...opts });
    const address = await s.start();
    servers.push(s);
    copy.members.push({ node: n, ttlSeconds: 30, peer: { address, publicKey: keys[n]!.publicKey } });
  }
  return { keys, copy, servers, close: () => Promise.all(servers.map((s) => s.close())) };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('peer endpoint (loopback)', () => {
  it('members answer signed, each with whether it reaches the control plane', async () => {
    const t = await trio({ a: false, b: false, c: true });
    closers.push(t.close);
    const answers = await askMembers(t.copy, { self: 'a', keys: t.keys.a!, now: () => 1_000, networks: loopbackNetworks() });
    expect(answers.sort((x, y) => x.node.localeCompare(y.node))).toEqual([
      { node: 'b', askedAt: 1_000, reachesControlPlane: false },
      { node: 'c', askedAt: 1_000, reachesControlPlane: true },
    ]);
  });

  it('a question from outside the membership, or signed with another key, gets no answer', async () => {
    const t = await trio({ a: false, b: false, c: false });
    closers.push(t.close);
    const b = t.copy.members[1]!;
    expect(await askPeer(b, { self: 'z', keys: PeerKeys.generate(), now: () => 0, networks: loopbackNetworks() })).toBeUndefined();
    expect(await askPeer(b, { self: 'a', keys: PeerKeys.generate(), now: () => 0, networks: loopbackNetworks() })).toBeUndefined();
    expect(await askPeer(b, { self: 'a', keys: t.keys.a!, now: () => 0, networks: loopbackNetworks() })).toBeDefined();
  });

  it('never dials an address outside the peer networks that is not the member\'s registration source (CCA-E0581)', async () => {
    const t = await trio({ a: false, b: false, c: false });
    closers.push(t.close);
    // A listener standing for "some other service on the network": it must never see a connection.
    const other = createServer((sock) => {
      connections++;
      sock.destroy();
    });
    let connections = 0;
    await new Promise<void>((r) => other.listen(0, '127.0.0.2', r));
    closers.push(() => new Promise((r) => other.close(r)));
    const port = (other.address() as AddressInfo).port;
    const dialled: string[] = [];
    const recording = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      dialled.push(String(input));
      return fetch(input, init);
    }) as typeof fetch;
    const b = t.copy.members[1]!;
    const c = t.copy.members[2]!;
    // b points its peers at another host; c is at its registration source.
    const copy: MembershipVersion = { ...t.copy, members: [t.copy.members[0]!, { ...b, peer: { ...b.peer!, address: `127.0.0.2:${port}` } }, { ...c, peer: { ...c.peer!, from: '127.0.0.1' } }] };
    const refused: string[] = [];
    const only = [parseCidr('127.0.0.1/32')!];
    const answers = await askMembers(copy, { self: 'a', keys: t.keys.a!, now: () => 0, networks: [], fetch: recording, refused: (m, why) => refused.push(`${m.node}: ${why}`) });
    expect(answers.map((x) => x.node)).toEqual(['c']);
    expect(dialled).toEqual([`http://${c.peer!.address}${PEER_PATH}`]);
    expect(refused).toEqual([`b: 127.0.0.2 is neither the address the node registered from (unknown) nor inside a peer network (none)`]);
    expect(connections).toBe(0);
    // Declared networks: inside them, dialled; a name (it could resolve anywhere), never.
    expect(await askPeer(b, { self: 'a', keys: t.keys.a!, now: () => 0, networks: only, fetch: recording })).toBeDefined();
    expect(await askPeer({ ...b, peer: { ...b.peer!, address: `localhost:${port}` } }, { self: 'a', keys: t.keys.a!, now: () => 0, networks: loopbackNetworks(), fetch: recording })).toBeUndefined();
    expect(dialled).toHaveLength(2);
    expect(connections).toBe(0);
  });

  it('an answer signed by a key other than the one in the copy counts as no answer', async () => {
    const t = await trio({ a: false, b: false, c: false });
    closers.push(t.close);
    const b = t.copy.members[1]!;
    const forged = { ...b, peer: { ...b.peer!, publicKey: PeerKeys.generate().publicKey } };
    expect(await askPeer(forged, { self: 'a', keys: t.keys.a!, now: () => 0, networks: loopbackNetworks() })).toBeUndefined();
  });

  it('refuses oversized bodies and unknown paths, and questions beyond its concurrency', async () => {
    const t = await trio({ a: false, b: false, c: false });
    closers.push(t.close);
    const url = `http://${t.copy.members[1]!.peer!.address}`;
    expect((await fetch(url + PEER_PATH, { method: 'POST', body: 'x'.repeat(QUORUM.maxBodyBytes + 1) })).status).toBe(413);
    expect((await fetch(url + '/elsewhere', { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(url + PEER_PATH, { method: 'POST', body: '{"from":"a"}' })).status).toBe(400);
    const busy = await trio({ a: false, b: false, c: false }, { maxConcurrent: 0 });
    closers.push(busy.close);
    expect(await askPeer(busy.copy.members[1]!, { self: 'a', keys: busy.keys.a!, now: () => 0, networks: loopbackNetworks() })).toBeUndefined();
  });

  it('a peer that accepts and never answers is no answer once the question times out', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    closers.push(() => new Promise((r) => { silent.close(() => r(undefined)); for (const s of open) s.destroy(); }));
    const open: import('node:net').Socket[] = [];
    silent.on('connection', (s) => open.push(s));
    const address = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const keys = PeerKeys.generate();
    expect(await askPeer({ node: 'b', ttlSeconds: 30, peer: { address, publicKey: keys.publicKey } }, { self: 'a', keys, now: () => 0, networks: loopbackNetworks() })).toBeUndefined();
  });

  it('keeps its key pair in the state directory (0600) and signs verifiably', () => {
    const tmp = tempDir('peer-keys');
    try {
      const k1 = PeerKeys.inDir(tmp.dir);
      const k2 = PeerKeys.inDir(tmp.dir);
      expect(k2.publicKey).toBe(k1.publicKey);
      expect(verifySignature(k1.publicKey, 'm', k1.sign('m'))).toBe(true);
      expect(verifySignature(k1.publicKey, 'n', k1.sign('m'))).toBe(false);
      expect(verifySignature('junk', 'm', k1.sign('m'))).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('peer quorum rounds (loopback, injected clock)', () => {
  /** Three agents whose endpoints answer from their own PeerQuorum; lastOk per node is set by the test. */
  async function cluster(names: string[], fetchOf?: (node: string) => typeof fetch) {
    let now = 100_000;
    const T = QUORUM.defaultTtlSeconds * 1000;
    const lastOk: Record<string, number> = Object.fromEntries(names.map((n) => [n, now]));
    const keys = Object.fromEntries(names.map((n) => [n, PeerKeys.generate()]));
    const copy: MembershipVersion = { version: 1, since: 0, members: [] };
    const quorums: Record<string, PeerQuorum> = {};
    const inFlight: Record<string, Promise<unknown> | undefined> = {};
    for (const n of names) {
      quorums[n] = new PeerQuorum({
        self: n, keys: keys[n]!, now: () => now, ttlMs: () => T, keepaliveSettled: () => inFlight[n],
        fenceAt: () => lastOk[n]! + T - FENCE.marginMs, lastOkSentAt: () => lastOk[n], membership: () => ({ copy, fetchedAt: lastOk[n]! }), log: () => undefined, networks: loopbackNetworks(),
        ...(fetchOf ? { fetch: fetchOf(n) } : {}),
      });
      const server = new PeerServer({ node: n, keys: keys[n]!, listen: '127.0.0.1:0', membership: () => copy, reaches: () => quorums[n]!.reaches() });
      copy.members.push({ node: n, ttlSeconds: 30, peer: { address: await server.start(), publicKey: keys[n]!.publicKey } });
      closers.push(() => server.close());
    }
    return { quorums, lastOk, inFlight, advance: (ms: number) => (now += ms), now: () => now, T };
  }

  it('a control-plane outage: everyone cut off, a majority confirms before the fence point and keeps confirming', async () => {
    const c = await cluster(['a', 'b', 'c']);
    c.advance(cannotReachAfterMs(c.T));
    const v = await c.quorums.a!.round();
    expect(v).toMatchObject({ confirmed: true, votes: 3, members: 3 });
    expect(c.now()).toBeLessThan(c.lastOk.a! + c.T - FENCE.marginMs);
    // Called every P, rounds chain the confirmations past the fence point for as long as the
    // outage lasts — asking only when the chain has less than the lead left, not every P.
    let asked = 0;
    for (let i = 0; i < 60; i++) {
      c.advance(QUORUM.pollMs);
      if (await c.quorums.a!.round()) asked++;
      expect(c.quorums.a!.confirmsOutage(c.now())).toBe(true);
    }
    const every = QUORUM.settleMs - QUORUM.reaskLeadMs;
    expect(asked).toBeGreaterThanOrEqual(Math.floor((60 * QUORUM.pollMs) / every));
    expect(asked).toBeLessThanOrEqual(Math.ceil((60 * QUORUM.pollMs) / every) + 1);
    expect(c.now()).toBeGreaterThan(c.lastOk.a! + c.T);
    // A gap longer than G (a confirmation's life) breaks the chain for good.
    c.advance(QUORUM.settleMs + 1);
    await c.quorums.a!.round();
    expect(c.quorums.a!.confirmsOutage(c.now())).toBe(false);
  });

  it('cut off alone: its peers reach the control plane, so it does not confirm and fences', async () => {
    const c = await cluster(['a', 'b', 'c']);
    c.advance(cannotReachAfterMs(c.T));
    c.lastOk.b = c.now();
    c.lastOk.c = c.now();
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: false, why: expect.stringContaining('reaches the control plane') });
    c.advance(c.T);
    expect(c.quorums.a!.confirmsOutage(c.now())).toBe(false);
  });

  it('a peer with a keepalive in flight answers once it settled, from its outcome', async () => {
    const c = await cluster(['a', 'b', 'c']);
    c.advance(cannotReachAfterMs(c.T));
    // b's keepalive fails: it then answers "cannot reach", and the outage is confirmed.
    c.inFlight.b = new Promise((_, reject) => setTimeout(() => { c.inFlight.b = undefined; reject(new Error('refused')); }, 100));
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: true });
    // Confirmed: no round until the chain nears its end.
    expect(await c.quorums.a!.round()).toBeUndefined();
    c.advance(QUORUM.settleMs - QUORUM.reaskLeadMs);
    // c's keepalive succeeds while a asks: it answers "reaches".
    c.inFlight.c = new Promise((resolve) => setTimeout(() => { c.lastOk.c = c.now(); c.inFlight.c = undefined; resolve(undefined); }, 100));
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: false, why: 'node c reaches the control plane' });
  });

  it('the first member that reaches the control plane ends the round; the agent then waits until near its fence point', async () => {
    const signals = new Map<string, AbortSignal>();
    const c = await cluster(['a', 'b', 'c'], () => (url, init) => {
      signals.set(String(url), init!.signal!);
      return fetch(url, init);
    });
    c.advance(cannotReachAfterMs(c.T));
    c.lastOk.b = c.now();
    // c has a keepalive in flight that will not settle during the round: it would answer only then.
    let settle!: () => void;
    c.inFlight.c = new Promise<void>((r) => (settle = r));
    const v = await c.quorums.a!.round();
    expect(v).toMatchObject({ confirmed: false, why: 'node b reaches the control plane', pause: true });
    expect(c.quorums.a!.questions).toBe(2);
    // The question to c was abandoned when b refuted the outage, not left to its timeout (A).
    expect(signals.size).toBe(2);
    const reasons = [...signals.values()].map((s) => (s.aborted ? (s.reason as Error).name : 'open'));
    expect(reasons).toEqual(['AbortError', 'AbortError']);
    settle();
    c.inFlight.c = undefined;
    // Refuted: no round until QUORUM.pauseLeadMs before a's fence point, then every P.
    const fenceAt = c.lastOk.a! + c.T - FENCE.marginMs;
    c.advance(QUORUM.pollMs);
    expect(await c.quorums.a!.round()).toBeUndefined();
    expect(c.quorums.a!.questions).toBe(2);
    c.advance(fenceAt - QUORUM.pauseLeadMs - c.now());
    c.lastOk.b = c.now();
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: false, pause: true });
  });

  it('before pauseLeadMs ahead of its fence point a round asks a few members first, the rest only if none reaches', async () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const c = await cluster(names);
    c.advance(cannotReachAfterMs(c.T));
    for (const n of names.slice(1)) c.lastOk[n] = c.now();
    // Every peer reaches the control plane: the probe settles the round.
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: false, pause: true });
    expect(c.quorums.a!.questions).toBe(QUORUM.probeMembers);
    // From pauseLeadMs before the fence point, every member at once, as always.
    const fenceAt = c.lastOk.a! + c.T - FENCE.marginMs;
    c.advance(fenceAt - QUORUM.pauseLeadMs - c.now());
    for (const n of names.slice(1)) c.lastOk[n] = c.now();
    expect(await c.quorums.a!.round()).toMatchObject({ confirmed: false, pause: true });
    expect(c.quorums.a!.questions).toBe(QUORUM.probeMembers + 5);
    // A whole-cluster outage, early in c's silence: the probe finds nobody reaching, the full round confirms.
    for (const n of names) c.lastOk[n] = c.now();
    c.advance(cannotReachAfterMs(c.T));
    const before = c.quorums.c!.questions;
    expect(await c.quorums.c!.round()).toMatchObject({ confirmed: true, votes: 6, members: 6 });
    expect(c.quorums.c!.questions - before).toBe(QUORUM.probeMembers + 5);
  });

  it('a node that reaches the control plane does not ask', async () => {
    const c = await cluster(['a', 'b', 'c']);
    expect(await c.quorums.a!.round()).toBeUndefined();
  });
});

describe('restart during a confirmed outage', () => {
  it('resumes the chain the previous run left in fence-at, no further', async () => {
    const { StateDir } = await import('../../agent/state.js');
    const { LeaseKeeper, OutageLatch, FENCE: F } = await import('../../agent/core/index.js');
    const tmp = tempDir('node-peer');
    try {
      const state = new StateDir(tmp.dir);
      const leaseAt = 30_000 - F.marginMs;
      state.saveLease({ lease: 1, tenure: 7, ttl: 30 });
      state.saveFenceAt(leaseAt);
      // A restarted agent's lease keeper (only its restore is used) and the latch its peers feed.
      const restart = () => {
        const keeper = new LeaseKeeper({ node: 'a', ttl: 30, control: undefined as never, disk: state, runtime: undefined as never, record: {} as never, clock: { mono: () => 0, wall: () => 0 }, log: () => undefined, event: () => undefined, changed: () => undefined });
        const latch = new OutageLatch(() => keeper.fence.fenceAt());
        expect(keeper.restore((from, until) => latch.resume(from, until))).toBe(true);
        expect(keeper.fence.fenceAt()).toBe(leaseAt);
        return latch;
      };
      // No outage was confirmed: nothing to resume, the fence point stands.
      expect(restart().confirmsOutage(leaseAt + 1)).toBe(false);
      // The previous run's confirmations reached 60 s: resumed until then.
      state.saveRunUntil(60_000);
      expect(state.fenceAt()).toBe(leaseAt);
      const resumed = restart();
      expect(resumed.confirmsOutage(59_999)).toBe(true);
      expect(resumed.confirmsOutage(60_000)).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('peer endpoint address in use', () => {
  it('is a coded environment diagnostic (CCA-E0580) naming the address', async () => {
    const { StateDir } = await import('../../agent/state.js');
    const { FenceClock } = await import('../../agent/core/fence.js');
    const { NodePeer } = await import('../../agent/peer/node-peer.js');
    const tmp = tempDir('node-peer-busy');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    try {
      const listen = `127.0.0.1:${(taken.address() as AddressInfo).port}`;
      const peer = new NodePeer({ node: 'a', state: new StateDir(tmp.dir), listen, advertise: '', now: () => 0, fence: () => new FenceClock(30), keepaliveSettled: () => undefined, ttlMs: () => 30_000, log: () => undefined });
      await expect(peer.start()).rejects.toMatchObject({ code: 'CCA-E0580', blame: 'environment' });
    } finally {
      await new Promise((r) => taken.close(r));
      tmp.cleanup();
    }
  });
});

describe('the membership copy in brief (AgentCore.status)', () => {
  it('shows the newest copy learned: its version, members and members with a peer key; an older request never replaces it', async () => {
    const { StateDir } = await import('../../agent/state.js');
    const { FenceClock } = await import('../../agent/core/fence.js');
    const { NodePeer } = await import('../../agent/peer/node-peer.js');
    const tmp = tempDir('node-peer-copy');
    try {
      const peer = new NodePeer({ node: 'a', state: new StateDir(tmp.dir), listen: '127.0.0.1:0', advertise: '', now: () => 0, fence: () => new FenceClock(30), keepaliveSettled: () => undefined, ttlMs: () => 30_000, log: () => undefined });
      expect(peer.copy()).toBeUndefined();
      const key = 'k'.repeat(43) + '=';
      const member = (node: string, withPeer: boolean) => ({ node, ttlSeconds: 30, ...(withPeer ? { peer: { address: '127.0.0.1:1', publicKey: key } } : {}) });
      peer.learned({ version: 2, since: 0, members: [member('a', true), member('b', true)] }, 2_000);
      expect(peer.copy()).toEqual({ version: 2, members: 2, withPeers: 2 });
      peer.learned({ version: 1, since: 0, members: [member('a', true)] }, 1_000);
      expect(peer.copy()).toEqual({ version: 2, members: 2, withPeers: 2 });
      peer.learned({ version: 3, since: 0, members: [member('a', true), member('b', true), member('c', false)] }, 3_000);
      expect(peer.copy()).toEqual({ version: 3, members: 3, withPeers: 2 });
    } finally {
      tmp.cleanup();
    }
  });
});
