import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { ADMIN, readSse, securedApp } from './harness.js';

const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string } }).error;
const endpoint = { replica: 'web-abcdefgh', node: 'n1', address: '127.0.0.1', ports: { http: 8080 } };

describe('GET /v1/services/{name}/endpoints', () => {
  test('needs a reader, answers a coded 404 for an unknown service, an empty set before anything is ready', async () => {
    const { call } = await securedApp();
    expect((await call('GET', '/v1/services/web/endpoints')).status).toBe(401);
    const missing = await call('GET', '/v1/services/web/endpoints', { token: ADMIN });
    expect(missing.status).toBe(404);
    expect(await errorOf(missing)).toMatchObject({ code: 'CCA-E0609' });
    expect((await call('GET', '/v1/services/..%2Fetc/endpoints', { token: ADMIN })).status).toBe(404);
    await call('POST', '/v1/apply', { json: { services: [{ name: 'web', image: 'busybox:1.35' }] }, token: ADMIN });
    const empty = await call('GET', '/v1/services/web/endpoints', { token: ADMIN });
    expect(empty.status).toBe(200);
    expect(await empty.json()).toMatchObject({ service: 'web', endpoints: [], modRevision: 0 });
  });

  test('returns the published set with the revision to watch from; the watch on /endpoints/ follows changes', async () => {
    const { call, store } = await securedApp();
    await call('POST', '/v1/apply', { json: { services: [{ name: 'web', image: 'busybox:1.35' }] }, token: ADMIN });
    const put = await store.put(buildKey('endpoints', 'web'), encodeFact('endpoints', { service: 'web', endpoints: [endpoint], at: 5 }));
    const body = (await (await call('GET', '/v1/services/web/endpoints', { token: ADMIN })).json()) as { revision: number; endpoints: unknown[]; modRevision: number };
    expect(body).toMatchObject({ endpoints: [endpoint], modRevision: put.revision, at: 5 });
    expect(body.revision).toBeGreaterThanOrEqual(put.revision);
    const watching = call('GET', `/v1/watch?prefix=/endpoints/&from=${body.revision + 1}`, { token: ADMIN });
    await store.put(buildKey('endpoints', 'web'), encodeFact('endpoints', { service: 'web', endpoints: [], at: 6 }));
    const events = await readSse(await watching, (es) => es.some((e) => e.event === 'batch'));
    const batch = JSON.parse(events.find((e) => e.event === 'batch')!.data) as { events: { kv: { key: string; value: string } }[] };
    expect(batch.events[0]!.kv.key).toBe('/endpoints/web');
    expect(JSON.parse(batch.events[0]!.kv.value)).toMatchObject({ endpoints: [] });
  });
});
