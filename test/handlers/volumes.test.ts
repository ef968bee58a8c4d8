import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { Store } from '../../db/store.js';
import { ADMIN, JOIN, securedApp } from './harness.js';
import { AgentClient } from '../../agent/client.js';
import { VolumeFeed } from '../../agent/volume-feed.js';

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

describe("an agent follows its node's volumes", () => {
  test('long-polled: at once with after 0, else when a volume of this node changes (not another node\'s)', async () => {
    const { call, store } = await securedApp();
    const cred = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()) as { credential: string };
    type Wanted = { revision: number; changed: boolean; volumes: { volume: string }[] };
    const get = async (after: number, waitMs = 5000) => (await (await call('GET', `/v1/agent/nodes/n1/volumes?after=${after}&waitMs=${waitMs}`, { token: cred.credential })).json()) as Wanted;
    const first = await get(0);
    expect(first).toMatchObject({ changed: true, volumes: [] });
    let settled = false;
    const waiting = get(first.revision).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 100));
    await want(store, 'n2', 'db', 'data'); // another node's: no answer
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    await want(store, 'n1', 'db', 'data');
    const next = await waiting;
    expect(next.changed).toBe(true);
    expect(next.volumes.map((v) => v.volume)).toEqual(['data']);
    // Nothing changes: the poll answers after its wait, unchanged.
    expect(await get(next.revision, 200)).toMatchObject({ changed: false, revision: next.revision });
    // Another node's credential cannot read them.
    const other = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: JOIN })).json()) as { credential: string };
    expect((await call('GET', '/v1/agent/nodes/n1/volumes?after=0', { token: other.credential })).status).toBe(403);
  });

  test("the agent's feed asks once, then only when the list changes; the core reads the last answer", async () => {
    const { app, store, call } = await securedApp();
    const cred = (await (await call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()) as { credential: string };
    let asked = 0;
    const fetchApp: typeof fetch = async (input, init) => {
      if (String(input).includes('/volumes')) asked++;
      return app.request(String(input).replace('http://pod', ''), init as RequestInit);
    };
    const client = new AgentClient('http://pod', 'n1', undefined, fetchApp);
    client.credential = cred.credential;
    let closed = false;
    const feed = new VolumeFeed({ client, pollWaitMs: 60_000, isClosed: () => closed, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) });
    const loop = feed.loop();
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(ok()).toBe(true);
    };
    await until(() => feed.current() !== undefined);
    expect(feed.current()).toEqual([]);
    // Quiet: one request held open, not one every sync.
    await new Promise((r) => setTimeout(r, 500));
    expect(asked).toBe(2);
    await want(store, 'n1', 'db', 'data');
    await until(() => feed.current()?.length === 1);
    expect(feed.current()![0]).toMatchObject({ node: 'n1', service: 'db', volume: 'data' });
    // One more request, held open again: nothing is asked until the next change.
    await until(() => asked === 3);
    await new Promise((r) => setTimeout(r, 300));
    expect(asked).toBe(3);
    // A dropped credential forgets the list: it may be another enrollment's.
    client.credential = '';
    await want(store, 'n1', 'db', 'logs'); // the poll in flight answers
    await until(() => feed.current() === undefined);
    closed = true;
    client.abort();
    await loop;
  });
});
