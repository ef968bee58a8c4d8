import { describe, expect, it } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { QUORUM, renewingWithinMs } from '../../core/model/quorum.js';
import { MemoryStore } from '../../db/memory.js';
import { parseCidr } from '../../core/model/peer-address.js';
import { record } from './support.js';
import { errorOf, secured } from './support.js';

/**
 * The agent routes' half of the quorum rule (docs/fencing.md): a registration sits on a
 * backstop lease with the agent's TTL in its record and in the answers; the membership comes
 * with the assignments; a tenure the node controller expired is never renewed again.
 */
describe('agent routes and the quorum rule', () => {
  it('registers on a backstop lease, answers with the agent TTL, and refuses to renew an expired tenure', async () => {
    const store = new MemoryStore();
    const { call, enroll, register } = await secured(store);
    const credential = await enroll('n1');
    const { lease, tenure } = await register('n1', credential);
    expect((await store.leaseTimeToLive(lease)).grantedTtl).toBe(QUORUM.backstopSeconds);
    const kv = (await store.get(buildKey('node', 'n1')))!;
    expect(decodeFact('node', kv.key, kv.value).leaseTtlSeconds).toBe(60);
    const ok = await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease }, token: credential });
    expect(await ok.json()).toEqual({ ttl: 60 });

    await store.put(buildKey('membership', 'nodes'), encodeFact('membership', { versions: [{ version: 4, since: 1, members: [{ node: 'n1', ttlSeconds: 60 }] }] }));
    const a = await call('GET', '/v1/agent/nodes/n1/assignments', { token: credential });
    expect(((await a.json()) as { membership: unknown }).membership).toMatchObject({ version: 4, members: [{ node: 'n1' }] });

    // The node controller expired this tenure: from that write on the lease is not renewed, and it goes.
    await store.put(buildKey('nodeStatus', 'n1'), encodeFact('nodeStatus', { node: 'n1', tenure, state: 'lost', since: 1, expired: true }));
    const refused = await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease }, token: credential });
    expect(refused.status).toBe(404);
    expect((await errorOf(refused)).code).toBe('CCA-E0107');
    expect(await store.get(buildKey('node', 'n1'))).toBeFalsy();
  });

  it('stamps renewingSince at a registration and at a keepalive that ends a silence of R, before renewing; not otherwise', async () => {
    let t = 1_000_000;
    const store = new MemoryStore({ now: () => t });
    const { call, enroll, register } = await secured(store);
    const credential = await enroll('n1');
    const before = Date.now();
    const { lease } = await register('n1', credential);
    const stamp = async () => {
      const kv = (await store.get(buildKey('node', 'n1')))!;
      return { since: decodeFact('node', kv.key, kv.value).renewingSince, modRevision: kv.modRevision };
    };
    const first = await stamp();
    expect(first.since).toBeGreaterThanOrEqual(before);
    const keepalive = async () => expect((await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease }, token: credential })).status).toBe(200);
    // A healthy keepalive interval (T/4 = 15 s at T = 60 s): nothing written.
    t += 15_000;
    await keepalive();
    expect(await stamp()).toEqual(first);
    // Silent for R (widened by a second: the store answers in whole seconds): stamped anew.
    t += renewingWithinMs(60_000) - QUORUM.granularityMs;
    const back = Date.now();
    await keepalive();
    const second = await stamp();
    expect(second.modRevision).toBeGreaterThan(first.modRevision);
    expect(second.since).toBeGreaterThanOrEqual(back);
  });

  it("a keepalive reads the node's record and status and its lease's silence at once: two round trips in a row, not three", async () => {
    // Each of the two reads waits until the other has been asked: done one after the other,
    // the first would wait for good (the agent's 1 s timeout under a busy pod, D: docs/fencing.md).
    let armed = false;
    const asked = new Set<string>();
    let bothAsked = () => undefined as void;
    const together = new Promise<void>((r) => (bothAsked = r));
    const gate = async (what: string) => {
      if (!armed) return;
      asked.add(what);
      if (asked.size === 2) bothAsked();
      await Promise.race([together, new Promise((_, no) => setTimeout(() => no(new Error(`${what} waited alone`)), 2_000))]);
    };
    class GatedStore extends MemoryStore {
      override async getMany(keys: readonly string[]) {
        await gate('record and status');
        return super.getMany(keys);
      }
      override async leasesTimeToLive(ids: readonly number[]) {
        await gate('lease silence');
        return super.leasesTimeToLive(ids);
      }
    }
    const store = new GatedStore();
    const { call, enroll, register } = await secured(store);
    const credential = await enroll('n1');
    const { lease } = await register('n1', credential);
    armed = true;
    const r = await call('POST', '/v1/agent/nodes/n1/keepalive', { json: { lease }, token: credential });
    expect(r.status, await r.clone().text()).toBe(200);
    expect([...asked].sort()).toEqual(['lease silence', 'record and status']);
  });

  it('a registration under the same lease (an agent restarted, a node condition) keeps renewingSince unless the lease was silent for R', async () => {
    let t = 1_000_000;
    const store = new MemoryStore({ now: () => t });
    const { call, enroll, register } = await secured(store);
    const credential = await enroll('n1');
    const { lease, tenure } = await register('n1', credential);
    const stamp = async () => {
      const kv = (await store.get(buildKey('node', 'n1')))!;
      return decodeFact('node', kv.key, kv.value).renewingSince;
    };
    const first = await stamp();
    const again = async (conditions: unknown[] = []) => {
      const r = await call('POST', '/v1/agent/nodes/n1/register', { json: { ...record('n1'), conditions, leaseTtlSeconds: 60, resumeLease: lease }, token: credential });
      expect(r.status).toBe(200);
      expect(((await r.json()) as { tenure: number }).tenure).toBe(tenure);
    };
    // Within R of the last renewal: the same stamp (its renewals keep counting toward an expiry).
    t += 5_000;
    await again([{ kind: 'disk-full', code: 'CCA-E0570', message: 'full', since: 1 }]);
    expect(await stamp()).toBe(first);
    t += renewingWithinMs(60_000) - 2 * QUORUM.granularityMs;
    await again();
    expect(await stamp()).toBe(first);
    // After a silence of R: stamped anew, as a keepalive would be.
    t += renewingWithinMs(60_000) - QUORUM.granularityMs;
    const back = Date.now();
    await again();
    expect(await stamp()).toBeGreaterThanOrEqual(back);
  });

  it('refuses a peer address outside the peer networks (CCA-E0581) and accepts one inside them; the answer is coded, nothing is written', async () => {
    const store = new MemoryStore();
    const { call, enroll } = await secured(store, { peerNetworks: [parseCidr('127.0.0.0/8')!, parseCidr('10.1.0.0/16')!] });
    const credential = await enroll('n1');
    const register = (address: string) => call('POST', '/v1/agent/nodes/n1/register', { json: { ...record('n1'), leaseTtlSeconds: 60, peer: { address, publicKey: 'k'.repeat(43) + '=' } }, token: credential });
    for (const address of ['10.2.0.9:22', '[fd00::1]:7000', 'db.internal:5432']) {
      const refused = await register(address);
      expect(refused.status, address).toBe(400);
      const e = await errorOf(refused);
      expect(e.code).toBe('CCA-E0581');
      expect(e.message).toContain(address);
      expect(await store.get(buildKey('node', 'n1'))).toBeFalsy();
    }
    expect((await register('10.1.4.2:7000')).status).toBe(200);
    expect((await register('127.0.0.1:7000')).status).toBe(200);
  });
});
