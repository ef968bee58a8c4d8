/**
 * npm run bench:store — every backend through the same Store interface, in one run,
 * one process, 256-byte values. Prints a table and, last, one JSON line.
 *
 *   BENCH_SECONDS=2           seconds per throughput cell
 *   DATABASE_URL=postgres://… use this Postgres instead of an embedded one (fsync on)
 *   ETCD_ENDPOINTS=host:port  use this etcd instead of starting one (when EtcdStore exists)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStore } from '../db/index.js';
import type { Store } from '../db/store.js';
import { startEmbeddedPostgres } from '../db/postgres/embedded.js';
import { freePort } from '../test/support/postgres-server.js';
import { startBenchEtcd } from './support/etcd.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const VALUE = 'v'.repeat(240);
const CONCURRENCY = [1, 16, 64];

interface Backend {
  name: string;
  open(): Promise<Store>;
  stop(): Promise<void>;
}

type Row = Record<string, number | null>;

async function throughput(concurrency: number, op: (worker: number, i: number) => Promise<unknown>): Promise<number> {
  const deadline = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < deadline; i++) {
        await op(w, i);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Writes paced at `rate`/s for SECONDS; each watcher records commit→event latency. */
async function watchLatency(store: Store, watchers: number, rate: number): Promise<{ p50: number; p99: number; events: number }> {
  const prefix = `w${watchers}/`;
  const committedAt = new Map<number, number>();
  const lat: number[] = [];
  const ac = new AbortController();
  const start = await store.revision();
  const arrivals = new Map<number, number[]>();
  let received = 0;
  const loops = Array.from({ length: watchers }, async () => {
    for await (const b of store.watch({ prefix, fromRevision: start + 1, signal: ac.signal })) {
      const t = performance.now();
      const c = committedAt.get(b.revision);
      if (c === undefined) {
        const list = arrivals.get(b.revision) ?? [];
        list.push(t);
        arrivals.set(b.revision, list);
      } else lat.push(Math.max(0, t - c));
      received++;
    }
  });
  const total = Math.round(rate * SECONDS);
  const t0 = performance.now();
  const writes: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    writes.push(
      store.put(`${prefix}${i % 100}`, `${VALUE}${i}`).then((r) => {
        const t = performance.now();
        committedAt.set(r.revision, t);
        // An event can arrive before the writer hears its commit: that is latency ≈ 0.
        for (const a of arrivals.get(r.revision) ?? []) lat.push(Math.max(0, a - t));
        arrivals.delete(r.revision);
      }),
    );
  }
  await Promise.all(writes);
  const want = total * watchers;
  const until = performance.now() + 10_000;
  while (received < want && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
  ac.abort();
  await Promise.allSettled(loops);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), events: received };
}

async function measure(b: Backend): Promise<Row> {
  const store = await b.open();
  const row: Row = {};
  try {
    for (const c of CONCURRENCY) {
      row[`put@${c}`] = await throughput(c, (w, i) => store.put(`p/${w}/${i % 64}`, `${VALUE}${i}`));
    }
    for (const c of CONCURRENCY) {
      // Each worker owns its key, so every compare holds; one round trip per txn.
      const last = new Map<number, number>();
      row[`txn@${c}`] = await throughput(c, async (w, i) => {
        const key = `t/${c}/${w}`;
        const r = await store.txn({
          compare: [{ key, target: 'modRevision', op: '=', value: last.get(w) ?? 0 }],
          success: [{ put: { key, value: `${VALUE}${i}` } }],
        });
        if (!r.succeeded) throw new Error(`bench bug: txn compare failed on ${b.name}`);
        last.set(w, r.revision);
      });
    }
    await Promise.all(Array.from({ length: 1000 }, (_, i) => store.put(`r/${String(i).padStart(4, '0')}`, VALUE)));
    row['range100@16'] = await throughput(16, (w, i) => store.range({ prefix: 'r/', start: undefined, limit: 100, ...(i % 2 ? { reverse: true } : {}) }));
    const one = await watchLatency(store, 1, 1000);
    row['watch1.p50ms'] = one.p50;
    row['watch1.p99ms'] = one.p99;
    const hundred = await watchLatency(store, 100, 1000);
    row['watch100.p50ms'] = hundred.p50;
    row['watch100.p99ms'] = hundred.p99;
  } finally {
    await store.close();
  }
  return row;
}

async function postgresBackend(): Promise<Backend> {
  if (process.env.DATABASE_URL) {
    const url = process.env.DATABASE_URL;
    return { name: 'PostgresStore', open: () => openStore(url), stop: async () => undefined };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-bench-pg-'));
  // fsync stays on: etcd fsyncs its WAL, so both sides pay for durability.
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort(), persistent: false });
  return {
    name: 'PostgresStore',
    open: () => openStore(pg.url),
    stop: async () => {
      await pg.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const backends: Backend[] = [{ name: 'MemoryStore', open: () => openStore('memory:'), stop: async () => undefined }];
  backends.push(await postgresBackend());
  const etcd = await startBenchEtcd();
  if (etcd) backends.push(etcd);
  const results: Record<string, Row> = {};
  for (const b of backends) {
    process.stderr.write(`measuring ${b.name}…\n`);
    try {
      results[b.name] = await measure(b);
    } finally {
      await b.stop();
    }
  }
  const metrics = Object.keys(results.MemoryStore!);
  const cols = Object.keys(results);
  const hasRatio = results.PostgresStore && results.EtcdStore;
  const header = ['metric', ...cols, ...(hasRatio ? ['Postgres÷etcd'] : [])];
  const lines = metrics.map((m) => {
    const vals = cols.map((c) => results[c]![m]);
    const ratio = hasRatio ? [fmt(results.PostgresStore![m]! / results.EtcdStore![m]!, 2)] : [];
    return [m, ...vals.map((v) => fmt(v ?? NaN, m.includes('ms') ? 1 : 0)), ...ratio];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const print = (l: string[]) => console.log(l.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  '));
  console.log(`store benchmark: ${SECONDS}s per cell, 256-byte values, ${os.cpus().length} cores; throughput in ops/s, latency in ms`);
  print(header);
  for (const l of lines) print(l);
  console.log(JSON.stringify({ bench: 'store', seconds: SECONDS, results }));
}

function fmt(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '–';
}

await main();
