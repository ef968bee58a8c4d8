import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { Client, type WatchBatch } from '../../../cli/client.js';
import { MemoryStore } from '../../../db/memory.js';
import { createApp } from '../../../handlers/app.js';
import { defaultLimits, type ServerDeps } from '../../../handlers/deps.js';
import { listen, type RunningHttp } from '../../../handlers/serve.js';
import { waitFor } from '../../support/wait.js';
import { testDeps } from '../harness.js';

/**
 * Issue #20: a watch stream is bounded in bytes. A watcher whose client stops reading is cut
 * at its bound (CCA-E0640) while the others keep receiving; `cca get -w`'s client resumes
 * after the cut with no gap and no duplicate.
 */

const QUEUE_BYTES = 64 * 1024;
const VALUE = 'v'.repeat(16 * 1024);

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(limits: Partial<ServerDeps['limits']> = {}): Promise<{ url: string; deps: ServerDeps; store: MemoryStore }> {
  const store = new MemoryStore();
  const deps = testDeps(store, { limits: { ...defaultLimits, heartbeatMs: 50, longPollMs: 500, watchQueueBytes: QUEUE_BYTES, watchStallMs: 300, watchCutGraceMs: 5_000, ...limits } });
  const http: RunningHttp = await listen(createApp(deps), { port: 0 });
  cleanups.push(() => http.close(0));
  cleanups.push(() => store.close());
  return { url: http.url, deps, store };
}

const cuts = async (deps: ServerDeps) => (await deps.metrics.watchCuts.get()).values.reduce((n, v) => n + v.value, 0);
const watchers = async (deps: ServerDeps) => (await deps.metrics.watchers.get()).values[0]?.value ?? 0;

/** Commit `n` revisions of 16 KiB under /x/, a few at a time so the event loop turns between them. */
async function flood(store: MemoryStore, n: number, onCommit: (revision: number) => void = () => undefined): Promise<number> {
  let last = 0;
  for (let i = 0; i < n; i++) {
    last = (await store.put(`/x/k${i % 50}`, `${i}:${VALUE}`)).revision;
    onCommit(last);
    if (i % 10 === 9) await new Promise((r) => setImmediate(r));
  }
  return last;
}

describe('watch streams bounded in bytes', () => {
  test('cca get -w\'s client, paused long enough to be cut, resumes after the cut with no gap and no duplicate', async () => {
    const { url, deps, store } = await server();
    const from = (await store.revision()) + 1;
    let ids = 0;
    const client = new Client({ server: url, nextRequestId: () => `r-test-${++ids}` });
    const ac = new AbortController();
    cleanups.push(() => ac.abort());
    const it = client.watch('/x/', from, ac.signal)[Symbol.asyncIterator]();
    const seen: number[] = [];
    const first = store.put('/x/first', 'x');
    seen.push((await it.next()).value!.revision);
    await first;
    // Stop reading (the iterator is not pulled) while 16 MiB is committed: the server cuts it.
    const last = await flood(store, 1_000);
    await waitFor('the paused watcher to be cut', () => cuts(deps), (n) => n >= 1, { timeoutMs: 30_000, everyMs: 10 });
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      seen.push(r.value.revision);
      if (r.value.revision >= last) break;
    }
    const watches = client.sent.filter((s) => s.path.startsWith('/v1/watch'));
    console.log(`cut ${await cuts(deps)} time(s); ${watches.length} watch requests; ${seen.length} revisions received`);
    // Read again right after the cut, the client got the event saying so, and watched again.
    expect(watches[0]!.diagnostics?.map((d) => d.code)).toEqual(['CCA-E0640']);
    // The revision the server named is where the client's own count resumed: nothing in between was lost.
    const resumeFrom = watches[0]!.diagnostics![0]!.params.resumeFrom;
    expect(watches[1]!.path).toContain(`from=${resumeFrom}`);
    expect(watches.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(Array.from({ length: last - from + 1 }, (_, i) => from + i));
  });

  test('a watcher that never reads is cut at its byte bound while another keeps receiving every revision; memory stays bounded', async () => {
    const { url, deps, store } = await server();
    const from = (await store.revision()) + 1;
    // The stuck client: asks for the watch, then never reads a byte.
    const stuck: Socket = connect(new URL(url).port ? Number(new URL(url).port) : 80, '127.0.0.1');
    cleanups.push(() => stuck.destroy());
    await new Promise<void>((r) => stuck.once('connect', () => r()));
    stuck.write(`GET /v1/watch?prefix=/x/&from=${from} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
    stuck.pause();
    // The healthy client reads everything as it comes, noting when each revision arrived.
    const arrived = new Map<number, number>();
    const ac = new AbortController();
    cleanups.push(() => ac.abort());
    const healthy = new Client({ server: url, nextRequestId: () => 'r-healthy' });
    const reading = (async () => {
      for await (const b of healthy.watch('/x/', from, ac.signal) as AsyncGenerator<WatchBatch>) arrived.set(b.revision, performance.now());
    })().catch(() => undefined);
    await waitFor('both watchers open', () => watchers(deps), (n) => n === 2);
    // Sample what the pod holds for its watchers while the flood runs.
    let maxHeld = 0;
    const sampler = setInterval(() => void deps.metrics.registry.getSingleMetric('cca_watch_queued_bytes')?.get().then((m) => (maxHeld = Math.max(maxHeld, m.values[0]?.value ?? 0))), 5);
    cleanups.push(() => clearInterval(sampler));
    const committed = new Map<number, number>();
    const last = await flood(store, 1_000, (rev) => committed.set(rev, performance.now()));
    await waitFor('the stuck watcher cut', () => cuts(deps), (n) => n >= 1, 30_000);
    await waitFor('the healthy watcher to have every revision', async () => arrived.size, (n) => n >= last - from + 1, 30_000);
    await waitFor('the stuck watcher\'s stream to end (its slot given back)', () => watchers(deps), (n) => n === 1, 30_000);
    clearInterval(sampler);
    const lat = [...committed].map(([rev, at]) => arrived.get(rev)! - at).sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]!.toFixed(1);
    console.log(`healthy watcher latency over ${lat.length} revisions: p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${pct(100)} ms; most held for watchers at once: ${maxHeld} bytes (bound ${QUEUE_BYTES} per watcher)`);
    expect([...arrived.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: last - from + 1 }, (_, i) => from + i));
    // Each watcher holds at most its bound plus one frame, and one write in flight.
    const frame = 17 * 1024;
    expect(maxHeld).toBeLessThanOrEqual(2 * (QUEUE_BYTES + frame + 64 * 1024));
    expect((await deps.metrics.watchCuts.get()).values.find((v) => v.labels.bound === 'watcher')?.value).toBeGreaterThanOrEqual(1);
    ac.abort();
    await reading;
  });

  test('the pod\'s bound: watchers that together hold too much are cut with CCA-E0641, naming where to resume', async () => {
    const { url, deps, store } = await server({ watchQueueBytes: 8 * 1024 * 1024, watchPodBytes: QUEUE_BYTES });
    const from = (await store.revision()) + 1;
    const res = await fetch(`${url}/v1/watch?prefix=/x/&from=${from}`);
    const reader = res.body!.getReader();
    await reader.read();
    // Not read while the flood is committed: the pod's bound is reached long before the watcher's.
    const last = await flood(store, 300);
    await waitFor('the cut at the pod\'s bound', async () => (await deps.metrics.watchCuts.get()).values.find((v) => v.labels.bound === 'pod')?.value ?? 0, (n) => n >= 1, 30_000);
    let text = '';
    const decoder = new TextDecoder();
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      text += decoder.decode(r.value, { stream: true });
    }
    const error = /event: error\ndata: (.*)\n/.exec(text);
    const d = JSON.parse(error![1]!).error as { code: string; params: { resumeFrom: number } };
    expect(d.code).toBe('CCA-E0641');
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    // Every batch before the cut, then the error whose id is the last of them, then the end.
    expect(d.params.resumeFrom).toBe(ids.at(-1)! + 1);
    expect(d.params.resumeFrom).toBeLessThanOrEqual(last);
    expect(ids.slice(0, -1)).toEqual(Array.from({ length: ids.length - 1 }, (_, i) => from + i));
  });

  test('over a Node server the stream is written to the socket: its headers, the request ID, every revision, and a client that leaves gives its slot back', async () => {
    const { url, deps, store } = await server();
    const from = (await store.revision()) + 1;
    const ac = new AbortController();
    const r = await fetch(`${url}/v1/watch?prefix=/x/&from=${from}`, { headers: { 'x-request-id': 'r-sse-headers' }, signal: ac.signal });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('x-request-id')).toBe('r-sse-headers');
    const last = await flood(store, 20);
    const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes(`id: ${last}\n`)) text += (await reader.read()).value ?? '';
    expect(text.startsWith('event: open\ndata: {"prefix":"/x/","from":' + from + ',"requestId":"r-sse-headers"}\n\n')).toBe(true);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: last - from + 1 }, (_, i) => from + i));
    expect(await watchers(deps)).toBe(1);
    ac.abort();
    await waitFor('the stream to end once its client left', () => watchers(deps), (n) => n === 0, 10_000);
  });
});
