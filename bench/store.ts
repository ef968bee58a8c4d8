/**
 * npm run bench:store — every backend through the same Store interface, in one run,
 * one process, 256-byte values; each throughput cell interleaves the backends in slices,
 * so they meet the same machine load. Prints a table and, last, one JSON line.
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
/** Slices per throughput cell and backend (interleaved). */
const ROUNDS = 4;

interface Backend {
  name: string;
  open(): Promise<Store>;
  stop(): Promise<void>;
}

type Row = Record<string, number | null>;

/** Ops completed by `concurrency` workers in `seconds`; `start` numbers the ops on from an earlier slice. */
async function throughput(concurrency: number, seconds: number, op: (worker: number, i: number) => Promise<unknown>, start = 0): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = start; performance.now() < deadline; i++) {
        await op(w, i);
        done++;
      }
    }),
  );
  return done;
}

/**
 * One throughput cell on every backend, interleaved: ROUNDS slices of SECONDS / ROUNDS per
 * backend in turn, so a change of the machine's load during the run falls on all of them
 * alike and the ratio stays fair. Ops per second over the cell.
 */
async function interleaved(opened: Opened[], cell: string, concurrency: number, op: (o: Opened) => (worker: number, i: number) => Promise<unknown>): Promise<void> {
  const done = new Map<Opened, number>(opened.map((o) => [o, 0]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const o of opened) done.set(o, done.get(o)! + (await throughput(concurrency, SECONDS / ROUNDS, op(o), done.get(o)!)));
  }
  for (const o of opened) o.row[cell] = done.get(o)! / SECONDS;
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

interface Opened {
  b: Backend;
  store: Store;
  row: Row;
}

async function measure(opened: Opened[]): Promise<void> {
  for (const c of CONCURRENCY) {
    await interleaved(opened, `put@${c}`, c, ({ store }) => (w, i) => store.put(`p/${w}/${i % 64}`, `${VALUE}${i}`));
  }
  for (const c of CONCURRENCY) {
    // Each worker owns its key, so every compare holds; one round trip per txn.
    const last = new Map<Opened, Map<number, number>>(opened.map((o) => [o, new Map()]));
    await interleaved(opened, `txn@${c}`, c, (o) => async (w, i) => {
      const key = `t/${c}/${w}`;
      const r = await o.store.txn({
        compare: [{ key, target: 'modRevision', op: '=', value: last.get(o)!.get(w) ?? 0 }],
        success: [{ put: { key, value: `${VALUE}${i}` } }],
      });
      if (!r.succeeded) throw new Error(`bench bug: txn compare failed on ${o.b.name}`);
      last.get(o)!.set(w, r.revision);
    });
  }
  for (const { store } of opened) await Promise.all(Array.from({ length: 1000 }, (_, i) => store.put(`r/${String(i).padStart(4, '0')}`, VALUE)));
  await interleaved(opened, 'range100@16', 16, ({ store }) => (_w, i) => store.range({ prefix: 'r/', start: undefined, limit: 100, ...(i % 2 ? { reverse: true } : {}) }));
  for (const { b, store, row } of opened) {
    process.stderr.write(`watch latency on ${b.name}…\n`);
    const one = await watchLatency(store, 1, 1000);
    row['watch1.p50ms'] = one.p50;
    row['watch1.p99ms'] = one.p99;
    const hundred = await watchLatency(store, 100, 1000);
    row['watch100.p50ms'] = hundred.p50;
    row['watch100.p99ms'] = hundred.p99;
  }
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
  const opened: Opened[] = [];
  try {
    for (const b of backends) opened.push({ b, store: await b.open(), row: {} });
    process.stderr.write(`measuring ${backends.map((b) => b.name).join(', ')}, interleaved…\n`);
    await measure(opened);
  } finally {
    for (const o of opened) await o.store.close();
    for (const b of backends) await b.stop();
  }
  const results: Record<string, Row> = Object.fromEntries(opened.map((o) => [o.b.name, o.row]));
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
  const load = os.loadavg().map((x) => Number(x.toFixed(2)));
  console.log(`load average at the end: ${load.join(' ')}`);
  console.log(JSON.stringify({ bench: 'store', seconds: SECONDS, interleaved: ROUNDS, loadAverage: load, results }));
}

function fmt(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '–';
}

await main();
