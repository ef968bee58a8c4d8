import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { readSse, testApp, testDeps } from './harness.js';

describe('HTTP basics', () => {
  test('every response carries a request ID: the client’s own when sane, else a fresh one', async () => {
    const { app } = testApp();
    const own = await app.request('/healthz', { headers: { 'X-Request-Id': 'cli-123.abc' } });
    expect(own.headers.get('x-request-id')).toBe('cli-123.abc');
    const bad = await app.request('/healthz', { headers: { 'X-Request-Id': 'no spaces please' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^r-0-\w+-[0-9a-f]{8}$/);
    const a = await app.request('/healthz');
    const b = await app.request('/healthz');
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  test('an unknown endpoint is a coded 404, not a stack trace', async () => {
    const { app } = testApp();
    const r = await app.request('/v1/nope', { method: 'POST' });
    expect(r.status).toBe(404);
    const body = await r.json();
    expect(body.error).toMatchObject({ code: 'CCA-E0604', blame: 'user', requestId: r.headers.get('x-request-id') });
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
  });

  test('healthz, readyz and metrics', async () => {
    const { app } = testApp();
    expect(await (await app.request('/healthz')).json()).toEqual({ ok: true, version: 'test' });
    expect(await (await app.request('/readyz')).json()).toEqual({ ok: true, revision: 1 });
    const m = await (await app.request('/metrics')).text();
    expect(m).toContain('cca_http_requests_total{route="/readyz",method="GET",status="200"} 1');
    expect(m).toContain('cca_store_revision 1');
  });

  test('readyz says 503 with a coded reason when the store is gone', async () => {
    const store = new MemoryStore();
    await store.close();
    const { app } = testApp(testDeps(store));
    const r = await app.request('/readyz');
    expect(r.status).toBe(503);
    expect((await r.json()).error.code).toBe('CCA-E0610');
  });
});

describe('GET /v1/state', () => {
  test('lists facts by prefix at a revision, paged with `after`', async () => {
    const deps = testDeps();
    const { app } = testApp(deps);
    for (const k of ['a/1', 'a/2', 'a/3', 'b/1']) await deps.store.put(k, `"${k}"`);
    const first = await (await app.request('/v1/state?prefix=a/&limit=2')).json();
    expect(first).toMatchObject({ revision: 5, count: 3, more: true });
    expect(first.kvs.map((k: { key: string }) => k.key)).toEqual(['a/1', 'a/2']);
    const next = await (await app.request(`/v1/state?prefix=a/&limit=2&after=a/2&revision=${first.revision}`)).json();
    expect(next.kvs.map((k: { key: string }) => k.key)).toEqual(['a/3']);
    expect(next.more).toBe(false);
    const past = await (await app.request('/v1/state?prefix=a/&revision=3')).json();
    expect(past.kvs.map((k: { key: string }) => k.key)).toEqual(['a/1', 'a/2']);
  });

  test('bad parameters are coded 400s naming the parameter; a future revision too', async () => {
    const { app } = testApp();
    const r = await app.request('/v1/state?limit=-1');
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({ code: 'CCA-E0603' });
    const u = await app.request('/v1/state?bogus=1');
    expect((await u.json()).error.message).toMatch(/bogus|Unrecognized/);
    const f = await app.request('/v1/state?revision=99');
    expect(f.status).toBe(400);
    expect((await f.json()).error.code).toBe('CCA-E0102');
  });
});

describe('GET /v1/watch (SSE)', () => {
  test('streams batches from a revision, resumes after Last-Event-ID, sends heartbeats', async () => {
    const deps = testDeps();
    const { app } = testApp(deps);
    await deps.store.put('w/1', '1'); // 2
    await deps.store.put('x/1', '1'); // 3
    await deps.store.put('w/2', '1'); // 4
    const res = await app.request('/v1/watch?prefix=w/&from=2');
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const later = deps.store.put('w/3', '1'); // 5
    const events = await readSse(res, (es) => es.filter((e) => e.event === 'batch').length >= 3 && es.some((e) => e.event === 'comment'));
    await later;
    const batches = events.filter((e) => e.event === 'batch');
    expect(batches.map((e) => e.id)).toEqual(['2', '4', '5']);
    expect(JSON.parse(batches[0]!.data).events[0].kv.key).toBe('w/1');
    expect(events.some((e) => e.event === 'comment' && e.data === 'heartbeat')).toBe(true);
    const resumed = await app.request('/v1/watch?prefix=w/&from=2', { headers: { 'Last-Event-ID': '4' } });
    const again = await readSse(resumed, (es) => es.some((e) => e.event === 'batch'));
    expect(again.filter((e) => e.event === 'batch').map((e) => e.id)).toEqual(['5']);
  });

  test('a compacted start ends the stream with a coded error event', async () => {
    const deps = testDeps();
    const { app } = testApp(deps);
    for (let i = 0; i < 5; i++) await deps.store.put('c', String(i));
    await deps.store.compact(5);
    const res = await app.request('/v1/watch?prefix=c&from=2');
    const events = await readSse(res, (es) => es.some((e) => e.event === 'error'));
    const err = JSON.parse(events.find((e) => e.event === 'error')!.data).error;
    expect(err).toMatchObject({ code: 'CCA-E0101', params: { compactRevision: 5 } });
  });
});
