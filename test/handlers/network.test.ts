import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { ADMIN, JOIN, securedApp } from './harness.js';
import { MemoryStore } from '../../db/memory.js';
import { defaultLimits } from '../../handlers/deps.js';
import { AgentClient } from '../../agent/client.js';

const db = (client: string) => `service db {\n  image = "busybox:1.35"\n  port pg { container = 5432 }\n  allow from service ${client} on port pg\n}\n`;
const api = 'service api {\n  image = "busybox:1.35"\n}\n';

describe('network policies through the API', () => {
  test('allow from an unknown service is refused at apply (CCA-E0323); a known or co-applied client is fine', async () => {
    const { call } = await securedApp();
    const bad = await call('POST', '/v1/apply', { text: db('apii'), token: ADMIN });
    expect(bad.status).toBe(400);
    const body = JSON.stringify(await bad.json());
    expect(body).toContain('CCA-E0323');
    expect((await call('POST', '/v1/apply', { text: db('api') + api, token: ADMIN })).status).toBe(200);
    // Once api exists, db alone applies.
    expect((await call('POST', '/v1/apply', { text: db('api').replace('5432', '5433'), token: ADMIN })).status).toBe(200);
    // The JSON path checks the same.
    const json = await call('POST', '/v1/apply', { json: { services: [{ name: 'cache', image: 'busybox:1.35', network: { allow: [{ service: 'nobody' }] } }] }, token: ADMIN });
    expect(JSON.stringify(await json.json())).toContain('CCA-E0323');
  });

  test("an agent long-polls its node's bundle: at once when it changed after `after`, else when any part of it changes (not another node's)", async () => {
    const { call, store } = await securedApp();
    const cred = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()) as { credential: string };
    type Answer = { revision: number; changed: boolean; rules: { replicas: unknown[] } | null; policies: { service: string }[]; addresses: { service: string; addresses: string[] }[] };
    const get = async (after: number, waitMs = 5000) => (await (await call('GET', `/v1/agent/nodes/n1/network?after=${after}&waitMs=${waitMs}`, { token: cred.credential })).json()) as Answer;
    const first = await get(0);
    expect(first).toMatchObject({ changed: true, rules: null, policies: [], addresses: [] });
    const rules = { node: 'n1', at: 1, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow' as const }] };
    let settled = false;
    const waiting = get(first.revision).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    await store.put(buildKey('network', 'n2'), encodeFact('network', { ...rules, node: 'n2' })); // another node's: no wake
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    await store.put(buildKey('netPolicy', 'db'), encodeFact('netPolicy', { service: 'db', allow: [{ service: 'api', port: 'pg' }], source: 'spec', at: 1 }));
    await store.put(buildKey('netAddrs', 'api'), encodeFact('netAddrs', { service: 'api', addresses: ['10.88.0.2'], total: 1, at: 1 }));
    const before = await store.revision();
    await store.put(buildKey('network', 'n1'), encodeFact('network', rules));
    const next = await waiting;
    expect(next.changed).toBe(true);
    expect(next.revision).toBeGreaterThan(before);
    expect(next.rules!.replicas).toEqual(rules.replicas);
    expect(next.policies.map((p) => p.service)).toEqual(['db']);
    expect(next.addresses).toEqual([{ service: 'api', addresses: ['10.88.0.2'], total: 1, at: 1 }]);
    // An address set the node's policies name wakes it; one they do not name does not.
    settled = false;
    const third = get(next.revision).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    await store.put(buildKey('netAddrs', 'other'), encodeFact('netAddrs', { service: 'other', addresses: ['10.88.0.9'], total: 1, at: 2 }));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    const unrelated = await store.revision();
    await store.put(buildKey('netAddrs', 'api'), encodeFact('netAddrs', { service: 'api', addresses: ['10.88.0.2', '10.88.0.3'], total: 2, at: 2 }));
    const woke = await third;
    expect(woke.revision).toBeGreaterThan(unrelated);
    expect(woke.addresses[0]!.addresses).toEqual(['10.88.0.2', '10.88.0.3']);
    expect(woke.addresses.map((a) => a.service)).toEqual(['api']);
    // Another node's credential cannot read it.
    const other = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: JOIN })).json()) as { credential: string };
    expect((await call('GET', '/v1/agent/nodes/n1/network?after=0', { token: other.credential })).status).toBe(403);
  });

  test('the bundle is paged by bytes, later pages read at the first page\'s revision; the agent client assembles it whole', async () => {
    const store = new MemoryStore();
    const { call, app } = await securedApp(store, { limits: { ...defaultLimits, assignmentsPageBytes: 200 } });
    const cred = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()) as { credential: string };
    const clients = ['a', 'b', 'c', 'd'];
    await store.put(buildKey('network', 'n1'), encodeFact('network', { node: 'n1', at: 1, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow' }] }));
    await store.put(buildKey('netPolicy', 'db'), encodeFact('netPolicy', { service: 'db', allow: clients.map((service) => ({ service })), source: 'spec', at: 1 }));
    for (const [i, c] of clients.entries()) await store.put(buildKey('netAddrs', c), encodeFact('netAddrs', { service: c, addresses: [`10.88.0.${i + 2}`, `10.88.1.${i + 2}`], total: 2, at: 1 }));
    const page1 = (await (await call('GET', '/v1/agent/nodes/n1/network?after=0', { token: cred.credential })).json()) as { revision: number; more?: boolean; cursor?: string; addresses: unknown[]; policies: unknown[] };
    expect(page1.more).toBe(true);
    expect(page1.addresses.length).toBeLessThan(clients.length);
    // A change after the first page does not show in the later ones.
    await store.put(buildKey('netAddrs', 'd'), encodeFact('netAddrs', { service: 'd', addresses: [], total: 0, at: 2 }));
    const client = new AgentClient('http://x', 'n1', 5_000, ((input: RequestInfo | URL, init?: RequestInit) => app.request(String(input).replace('http://x', ''), init)) as typeof fetch);
    client.credential = cred.credential;
    const whole = await client.network(0, 0);
    expect(whole.bundle.policies.map((p) => p.service)).toEqual(['db']);
    expect(whole.bundle.addresses.map((a) => a.service)).toEqual(clients);
    expect(whole.bundle.addresses.at(-1)!.addresses).toEqual([]);
  });
});
