import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { ADMIN, JOIN, securedApp } from './harness.js';

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

  test("an agent long-polls its node's rule set: at once when it changed after `after`, else when it changes", async () => {
    const { call, store } = await securedApp();
    const cred = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()) as { credential: string };
    const first = (await (await call('GET', '/v1/agent/nodes/n1/network?after=0', { token: cred.credential })).json()) as { revision: number; changed: boolean; rules: unknown };
    expect(first).toMatchObject({ changed: true, rules: null });
    const rules = { node: 'n1', at: 1, replicas: [{ replica: 'db-1', service: 'db', policy: 'allow' as const, rules: [{ port: 5432, protocol: 'tcp' as const, services: ['api'], from: ['10.88.0.2'] }] }] };
    const waiting = call('GET', `/v1/agent/nodes/n1/network?after=${first.revision}&waitMs=5000`, { token: cred.credential });
    await new Promise((r) => setTimeout(r, 100));
    await store.put(buildKey('network', 'n2'), encodeFact('network', { ...rules, node: 'n2' })); // another node's: no wake
    await store.put(buildKey('network', 'n1'), encodeFact('network', rules));
    const next = (await (await waiting).json()) as { changed: boolean; rules: typeof rules };
    expect(next.changed).toBe(true);
    expect(next.rules.replicas[0]!.rules[0]!.from).toEqual(['10.88.0.2']);
    // Another node's credential cannot read it.
    const other = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: JOIN })).json()) as { credential: string };
    expect((await call('GET', '/v1/agent/nodes/n1/network?after=0', { token: other.credential })).status).toBe(403);
  });
});
