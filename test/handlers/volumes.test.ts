import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { Store } from '../../db/store.js';
import { ADMIN, securedApp } from './harness.js';

const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string } }).error;
const MI = 1024 * 1024;

async function want(store: Store, node: string, service: string, volume: string, extra: { sizeBytes?: number; usedBy?: string; usedAt?: number } = {}) {
  await store.put(buildKey('volume', node, service, volume), encodeFact('volume', { node, service, volume, sizeBytes: 64 * MI, at: 1, ...extra }));
}
async function report(store: Store, node: string, service: string, volume: string, extra: { state?: 'creating' | 'ready' | 'failed'; usedBytes?: number; sizeBytes?: number; diagnostic?: { code: string; message: string } } = {}) {
  await store.put(
    buildKey('observedVolume', node, service, volume),
    encodeFact('observedVolume', { state: 'ready', path: `/var/lib/cca/volumes/${service}/${volume}/data`, sizeBytes: 64 * MI, at: 2, ...extra }),
  );
}
async function apply(call: Awaited<ReturnType<typeof securedApp>>['call'], ...names: string[]) {
  const r = await call('POST', '/v1/apply', { json: { services: names.map((name) => ({ name, image: 'busybox:1.35' })) }, token: ADMIN });
  expect(r.status).toBe(200);
}

interface Answer {
  revision: number;
  volumes: { node: string; service: string; volume: string; state: string; wanted: boolean; sizeBytes: number; usedBytes?: number; path?: string; usedBy?: string; diagnostic?: unknown; desired?: unknown; observed?: unknown }[];
}

describe('GET /v1/volumes', () => {
  test('needs a reader; joins wanted with reported: ready, not reported yet, deleting; sorted by node, service, volume', async () => {
    const { call, store } = await securedApp();
    expect((await call('GET', '/v1/volumes')).status).toBe(401);
    const empty = await call('GET', '/v1/volumes', { token: ADMIN });
    expect(empty.status).toBe(200);
    expect(((await empty.json()) as Answer).volumes).toEqual([]);

    await apply(call, 'db', 'cache');
    // Joined: wanted on n1 and reported ready, with its use and last user.
    await want(store, 'n1', 'db', 'data', { usedBy: 'db-aaaaaaaa', usedAt: 5 });
    await report(store, 'n1', 'db', 'data', { usedBytes: 3 * MI });
    // Wanted on n2, no report yet.
    await want(store, 'n2', 'db', 'data', { sizeBytes: 128 * MI });
    // Released by the storage controller, still reported by n1's agent (and over its size).
    await report(store, 'n1', 'cache', 'tmp', { sizeBytes: MI, usedBytes: 2 * MI, diagnostic: { code: 'CCA-E0521', message: 'over size' } });
    // The agent is still creating this one.
    await want(store, 'n1', 'db', 'logs');
    await report(store, 'n1', 'db', 'logs', { state: 'creating' });

    const r = await call('GET', '/v1/volumes', { token: ADMIN });
    expect(r.status).toBe(200);
    const body = (await r.json()) as Answer;
    expect(body.revision).toBe(await store.revision());
    expect(body.volumes.map((v) => [v.node, v.service, v.volume, v.state, v.wanted])).toEqual([
      ['n1', 'cache', 'tmp', 'deleting', false],
      ['n1', 'db', 'data', 'ready', true],
      ['n1', 'db', 'logs', 'creating', true],
      ['n2', 'db', 'data', 'not reported', true],
    ]);
    const [released, joined, , unreported] = body.volumes;
    expect(joined).toMatchObject({ sizeBytes: 64 * MI, usedBytes: 3 * MI, path: '/var/lib/cca/volumes/db/data/data', usedBy: 'db-aaaaaaaa', usedAt: 5 });
    expect(joined!.desired).toMatchObject({ node: 'n1', sizeBytes: 64 * MI });
    expect(joined!.observed).toMatchObject({ state: 'ready', at: 2 });
    expect(released).toMatchObject({ sizeBytes: MI, usedBytes: 2 * MI, diagnostic: { code: 'CCA-E0521' } });
    expect(released).not.toHaveProperty('desired');
    expect(released).not.toHaveProperty('usedBy');
    expect(unreported).toMatchObject({ sizeBytes: 128 * MI });
    expect(unreported).not.toHaveProperty('observed');
    expect(unreported).not.toHaveProperty('path');
    expect(unreported).not.toHaveProperty('usedBytes');
  });

  test('?service filters; an unknown service is a coded 404, a deleted one still deleting its data is listed', async () => {
    const { call, store } = await securedApp();
    await apply(call, 'db', 'web');
    await want(store, 'n1', 'db', 'data');
    await report(store, 'n1', 'db', 'data');
    await want(store, 'n2', 'db', 'data');
    await report(store, 'n1', 'gone', 'tmp');
    await want(store, 'n1', 'other', 'x');

    const db = (await (await call('GET', '/v1/volumes?service=db', { token: ADMIN })).json()) as Answer;
    expect(db.volumes.map((v) => `${v.node}/${v.service}/${v.volume}:${v.state}`)).toEqual(['n1/db/data:ready', 'n2/db/data:not reported']);
    // A service that exists but holds no volume: an empty list, not a 404.
    const web = await call('GET', '/v1/volumes?service=web', { token: ADMIN });
    expect(web.status).toBe(200);
    expect(((await web.json()) as Answer).volumes).toEqual([]);
    // No spec, but its volume is still reported (the service was deleted, the agent not yet synced).
    const gone = (await (await call('GET', '/v1/volumes?service=gone', { token: ADMIN })).json()) as Answer;
    expect(gone.volumes.map((v) => `${v.node}/${v.service}/${v.volume}:${v.state}`)).toEqual(['n1/gone/tmp:deleting']);

    for (const name of ['nope', 'Not_A_Name']) {
      const missing = await call('GET', `/v1/volumes?service=${name}`, { token: ADMIN });
      expect(missing.status).toBe(404);
      expect(await errorOf(missing)).toMatchObject({ code: 'CCA-E0609' });
    }
    const bad = await call('GET', '/v1/volumes?service=', { token: ADMIN });
    expect(bad.status).toBe(400);
    expect(await errorOf(bad)).toMatchObject({ code: 'CCA-E0603' });
    const extra = await call('GET', '/v1/volumes?node=n1', { token: ADMIN });
    expect(extra.status).toBe(400);
  });
});
