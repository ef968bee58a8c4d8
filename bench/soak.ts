/**
 * npm run bench:soak — steady memory: one server pod (a real process on embedded Postgres) and
 * BENCH_AGENTS real agents on the fake runtime in BENCH_WORKERS separate processes, for
 * BENCH_MINUTES. One service of 10 replicas per agent (bench:system's density), scaled down by a
 * tenth and back every other minute so replicas keep being created and deleted. Every minute
 * it samples the pod's RSS, heap and CPU and each agent process's RSS, prints the row, and at
 * the end the growth after warm-up (last sample ÷ the first after warm-up, and a least-squares
 * slope). Last line: one JSON object with the figures and the load average.
 *
 *   BENCH_MINUTES=30  BENCH_AGENTS=100  BENCH_WORKERS=4  BENCH_WARMUP_MINUTES=5
 *   BENCH_MINUTE_MS=60000 (a "minute", shortened by the test that keeps this runnable)
 *   BENCH_HEAP_SNAPSHOTS=6,30  BENCH_HEAP_DIR=/tmp/x  (the pod writes a V8 heap snapshot after
 *   those minutes' samples; compare two with `npx tsx bench/heap-diff.ts A B`)
 *   BENCH_TRACE_GC=1  (the pod runs with --trace-gc; each minute's row gets the heap left after
 *   the minute's last full collection: the live set, which RSS and heap used do not show)
 *   BENCH_STALL_MINUTE=10  BENCH_STALL_SECONDS=40  (after that minute's sample the pod is
 *   stopped with SIGSTOP for that long: what the agents hold while the control plane is silent)
 *   BENCH_WORKER_HEAP_DIR=/tmp/y  (`kill -USR2 <agent process>` writes its heap snapshot there)
 *   BENCH_PROFILE=/tmp/z  (the pod's --cpu-prof profile; `bench/profile-windows.ts` splits it by time)
 * Each row is followed by the workers' time per controller in that minute; the end names the
 * store prefixes whose row counts changed after warm-up.
 */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { z } from 'zod';
import { startPod, type BenchPod } from './support/pod.js';
import { load, mib, sleep, usage } from './support/usage.js';
import { Workers } from './support/workers.js';
import { workerTime, workerTimeJson, workerTimeSince, workerTimeText, type WorkerTime } from './support/worker-time.js';

const env = z
  .object({
    BENCH_MINUTES: z.coerce.number().int().positive().default(30),
    BENCH_AGENTS: z.coerce.number().int().positive().default(100),
    BENCH_WORKERS: z.coerce.number().int().positive().default(4),
    BENCH_WARMUP_MINUTES: z.coerce.number().int().nonnegative().default(5),
    BENCH_MINUTE_MS: z.coerce.number().int().positive().default(60_000),
    BENCH_HEAP_SNAPSHOTS: z
      .string()
      .regex(/^\d+(,\d+)*$/, 'minutes, comma-separated')
      .optional()
      .transform((s) => new Set((s ?? '').split(',').filter(Boolean).map(Number))),
    BENCH_HEAP_DIR: z.string().min(1).default(path.join(os.tmpdir(), 'cca-soak-heap')),
    BENCH_TRACE_GC: z.enum(['0', '1']).default('0'),
    BENCH_STALL_MINUTE: z.coerce.number().int().positive().optional(),
    BENCH_STALL_SECONDS: z.coerce.number().int().positive().default(40),
    /** The pod's CPU profile (--cpu-prof) goes here; `bench/profile-windows.ts` splits it by minute. */
    BENCH_PROFILE: z.string().min(1).optional(),
  })
  .parse(process.env);
const MINUTES = env.BENCH_MINUTES;
const WARMUP = Math.min(env.BENCH_WARMUP_MINUTES, MINUTES - 1);
const REPLICAS = 10 * env.BENCH_AGENTS;
const WORKERS = Math.min(env.BENCH_WORKERS, env.BENCH_AGENTS);

type Msg = { type: 'ready'; agents: number; registered: number } | { type: 'stopped' };
interface Sample {
  minute: number;
  podRssMiB: number;
  podHeapMiB: number;
  /** With BENCH_TRACE_GC: the heap after the last full collection (MB as V8 prints them). */
  liveAfterGcMiB: number;
  /** What V8 holds for the heap (used + garbage + free): RSS follows this, not the used part. */
  podHeapTotalMiB: number;
  /** Buffers and other memory V8 accounts for outside its heap. */
  podExternalMiB: number;
  podCores: number;
  agentRssMiB: number[];
  running: number;
  /** Rows and bytes of the store's tables (cca_kv, cca_log): a pod that reads whole prefixes grows with them. */
  kvRows: number;
  kvMiB: number;
  logRows: number;
  logMiB: number;
  /** Postgres sessions of the pod's database, those waiting on a lock, those idle in a transaction. */
  pgConnections: number;
  pgLockWaits: number;
  pgIdleInTxn: number;
  /** cca_kv rows per key prefix (`/replicas/` → "replicas"). */
  kvByKind: Record<string, number>;
  /** The pod's workers' time per controller during the minute (seconds and steps). */
  workers: Record<string, { seconds: number; steps: number }>;
  /** How long the pod took to answer GET /v1/services/soak. */
  answerMs: number;
  load: number;
}

/** Heap used and reserved, and memory outside the heap, from the pod's /metrics (prom-client's default metrics). */
async function heapOf(url: string): Promise<{ used: number; total: number; external: number }> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(60_000) })).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { used: metric('nodejs_heap_size_used_bytes'), total: metric('nodejs_heap_size_total_bytes'), external: metric('nodejs_external_memory_bytes') };
}

async function api(pod: BenchPod, method: string, path: string, body?: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${pod.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${pod.admin}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) },
    ...(body ? { body } : {}),
    signal: AbortSignal.timeout(60_000),
  });
  const j = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

/** A request of the soak's own that failed is counted and reported, not fatal: the pod may be slow to answer under load. */
let unanswered = 0;
async function tryApi(pod: BenchPod, method: string, path: string, body?: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await api(pod, method, path, body);
  } catch (e) {
    unanswered++;
    process.stderr.write(`${method} ${path}: ${e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e)}\n`);
    return undefined;
  }
}

type StoreSample = { kvRows: number; kvMiB: number; logRows: number; logMiB: number; pgConnections: number; pgLockWaits: number; pgIdleInTxn: number; kvByKind: Record<string, number> };
async function storeSize(pgUrl: string): Promise<StoreSample> {
  const c = new pg.Client({ connectionString: pgUrl, application_name: 'cca-bench-soak' });
  await c.connect();
  try {
    const size = async (t: string) => {
      const r = await c.query<{ n: string; b: string }>(`SELECT count(*) AS n, pg_total_relation_size('${t}') AS b FROM ${t}`);
      return { rows: Number(r.rows[0]!.n), mib: mib(Number(r.rows[0]!.b)) };
    };
    const kv = await size('cca_kv');
    const log = await size('cca_log');
    // A pod slow to answer while its CPU is low is waiting: on a lock, or on a connection held idle in a transaction.
    const a = await c.query<{ lock: string; idle: string; total: string }>(
      `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock') AS lock, count(*) FILTER (WHERE state = 'idle in transaction') AS idle, count(*) AS total
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    const r = a.rows[0]!;
    // Which prefixes the rows are under: a controller that reads a growing prefix costs more each step.
    const kinds = await c.query<{ kind: string; n: string }>(`SELECT split_part(key, '/', 2) AS kind, count(*) AS n FROM cca_kv GROUP BY 1 ORDER BY 1`);
    const kvByKind = Object.fromEntries(kinds.rows.map((k) => [k.kind, Number(k.n)]));
    return { kvRows: kv.rows, kvMiB: kv.mib, logRows: log.rows, logMiB: log.mib, pgConnections: Number(r.total), pgLockWaits: Number(r.lock), pgIdleInTxn: Number(r.idle), kvByKind };
  } finally {
    await c.end();
  }
}

/** Ask the pod for a heap snapshot (--heapsnapshot-signal) and wait until its file stops growing. */
async function heapSnapshot(pid: number, dir: string, minute: number): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(1000);
    const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (!file) continue;
    const size = statSync(path.join(dir, file)).size;
    await sleep(2000);
    if (statSync(path.join(dir, file)).size === size && size > 0) {
      process.stderr.write(`minute ${minute}: heap snapshot ${path.join(dir, file)} (${mib(size).toFixed(0)} MiB)\n`);
      return path.join(dir, file);
    }
  }
  return '';
}

const spec = (replicas: number) => `service soak {\n  image    = "busybox:1.35"\n  command  = ["sleep", "3600"]\n  replicas = ${replicas}\n  cpu      = 0.1\n  memory   = 32Mi\n}\n`;

/**
 * The heap left by the last full collection in the pod's log so far (--trace-gc lines such as
 * `Mark-Compact 450.1 (600.3) -> 180.2 (590.1) MB`), MiB; NaN when none yet.
 */
function liveAfterLastMarkCompact(log: string): number {
  const all = [...log.matchAll(/Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(/g)];
  return all.length ? Number(all.at(-1)![1]) : NaN;
}

/** Least-squares slope of ys over xs. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const num = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0);
  const den = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

async function main() {
  const snapshots = env.BENCH_HEAP_SNAPSHOTS;
  if (snapshots.size) mkdirSync(env.BENCH_HEAP_DIR, { recursive: true });
  const traceGc = env.BENCH_TRACE_GC === '1';
  const pod = await startPod('soak', [...(snapshots.size ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${env.BENCH_HEAP_DIR}`] : []), ...(traceGc ? ['--trace-gc'] : []), ...(env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_PROFILE}`] : [])]);
  const heapFiles: string[] = [];
  let workers: Workers<Msg> | undefined;
  const samples: Sample[] = [];
  let registered = 0;
  let podEnded = '';
  try {
    const nodes = Array.from({ length: env.BENCH_AGENTS }, (_, i) => `soak-${String(i + 1).padStart(3, '0')}`);
    // Room for twice the replicas, as bench:system.
    const perNode = 20;
    workers = new Workers<Msg>(
      'agent-host.ts',
      Array.from({ length: WORKERS }, (_, w) => ({
        server: pod.url,
        join: pod.join,
        nodes: nodes.filter((_, i) => i % WORKERS === w),
        zones: ['a', 'b', 'c', 'd'],
        cpuMillis: perNode * 100,
        memoryBytes: perNode * 32 * 2 ** 20,
      })),
    );
    const ready = await workers.collect('ready', 300_000);
    registered = ready.reduce((a, r) => a + r.registered, 0);
    process.stderr.write(`${ready.reduce((a, r) => a + r.agents, 0)} agents in ${WORKERS} processes, ${registered} registered; pod ${pod.url} (pid ${pod.pid})\n`);
    await api(pod, 'POST', '/v1/apply', spec(REPLICAS));

    console.log(`soak: one pod, ${env.BENCH_AGENTS} agents (fake runtime) in ${WORKERS} processes, ${REPLICAS} replicas, ${MINUTES} × ${env.BENCH_MINUTE_MS / 1000} s`);
    console.log('minute  pod RSS MiB  heap used / total / external / live after GC MiB  pod cores  agent proc RSS MiB (mean / max)  running  answer ms  kv rows / MiB  log rows / MiB  pg conns / lock waits / idle in txn  load');
    let cpu = (await usage(pod.pid)).cpu;
    let steps: WorkerTime = await workerTime(pod.url);
    let t = performance.now();
    for (let minute = 1; minute <= MINUTES; minute++) {
      // Every other minute a tenth of the replicas goes, and comes back the next.
      if (minute > 1) await tryApi(pod, 'POST', '/v1/apply', spec(minute % 2 === 0 ? REPLICAS - REPLICAS / 10 : REPLICAS));
      await sleep(Math.max(0, t + env.BENCH_MINUTE_MS - performance.now()));
      if (pod.exited()) {
        podEnded = `minute ${minute}: the pod ${pod.exited()}`;
        console.log(podEnded);
        break;
      }
      const now = performance.now();
      const p = await usage(pod.pid);
      const agentRss = await Promise.all(workers.pids.map(async (pid) => (await usage(pid)).rss));
      const asked = performance.now();
      const svc = (await tryApi(pod, 'GET', '/v1/services/soak'))?.service as { running?: number } | undefined;
      const answerMs = Math.round(performance.now() - asked);
      const heap = await heapOf(pod.url).catch(() => ({ used: NaN, total: NaN, external: NaN }));
      const stepsNow = await workerTime(pod.url).catch(() => steps);
      const minuteSteps = workerTimeSince(stepsNow, steps);
      steps = stepsNow;
      const s: Sample = {
        minute,
        podRssMiB: mib(p.rss),
        podHeapMiB: mib(heap.used),
        podHeapTotalMiB: mib(heap.total),
        liveAfterGcMiB: traceGc ? liveAfterLastMarkCompact(pod.log()) : NaN,
        podExternalMiB: mib(heap.external),
        podCores: Number(((p.cpu - cpu) / ((now - t) / 1000)).toFixed(3)),
        agentRssMiB: agentRss.map(mib),
        running: svc?.running ?? -1,
        ...(await storeSize(pod.pgUrl).catch((): StoreSample => ({ kvRows: NaN, kvMiB: NaN, logRows: NaN, logMiB: NaN, pgConnections: NaN, pgLockWaits: NaN, pgIdleInTxn: NaN, kvByKind: {} }))),
        workers: workerTimeJson(minuteSteps),
        answerMs,
        load: load(),
      };
      cpu = p.cpu;
      t = now;
      samples.push(s);
      const mean = s.agentRssMiB.reduce((a, b) => a + b, 0) / s.agentRssMiB.length;
      console.log(
        `${String(minute).padStart(6)}  ${s.podRssMiB.toFixed(1).padStart(11)}  ${`${s.podHeapMiB.toFixed(0)} / ${s.podHeapTotalMiB.toFixed(0)} / ${s.podExternalMiB.toFixed(0)} / ${Number.isNaN(s.liveAfterGcMiB) ? '-' : s.liveAfterGcMiB.toFixed(0)}`.padStart(46)}  ${s.podCores.toFixed(2).padStart(9)}  ${`${mean.toFixed(1)} / ${Math.max(...s.agentRssMiB).toFixed(1)}`.padStart(32)}  ${String(s.running).padStart(7)}  ${String(s.answerMs).padStart(9)}  ${`${s.kvRows} / ${s.kvMiB.toFixed(1)}`.padStart(13)}  ${`${s.logRows} / ${s.logMiB.toFixed(1)}`.padStart(14)}  ${`${s.pgConnections} / ${s.pgLockWaits} / ${s.pgIdleInTxn}`.padStart(34)}  ${s.load.toFixed(1)}`,
      );
      console.log(`        workers: ${workerTimeText(minuteSteps) || 'idle'}`);
      if (minute === env.BENCH_STALL_MINUTE) {
        // The control plane stops answering (a VM paused, a long GC) while the agents keep asking.
        console.log(`minute ${minute}: the pod is stopped (SIGSTOP) for ${env.BENCH_STALL_SECONDS} s`);
        process.kill(pod.pid, 'SIGSTOP');
        await sleep(env.BENCH_STALL_SECONDS * 1000);
        process.kill(pod.pid, 'SIGCONT');
        t = performance.now();
      }
      if (snapshots.has(minute)) {
        heapFiles.push(await heapSnapshot(pod.pid, env.BENCH_HEAP_DIR, minute));
        // The snapshot's pause is not the minute's work.
        t = performance.now();
      }
    }
  } finally {
    await workers?.stop();
    await pod.stop();
  }

  if (samples.length === 0) {
    console.log(JSON.stringify({ bench: 'soak', load: load(), results: { podEnded, registered }, samples }));
    process.exit(1);
  }
  const after = samples.slice(Math.min(WARMUP, samples.length - 1));
  const first = after[0]!;
  const last = after.at(-1)!;
  const agentMax = (s: Sample) => Math.max(...s.agentRssMiB);
  const xs = after.map((s) => s.minute);
  const growth = (a: number, b: number) => Number((b / a - 1).toFixed(4));
  // Slopes per hour of samples (a sample every BENCH_MINUTE_MS).
  const perHour = (ys: number[]) => Number((slope(xs, ys) * (3_600_000 / env.BENCH_MINUTE_MS)).toFixed(1));
  const results = {
    minutes: MINUTES,
    warmupMinutes: WARMUP,
    agents: env.BENCH_AGENTS,
    agentProcesses: WORKERS,
    registered,
    replicas: REPLICAS,
    podRssMiB: { afterWarmup: first.podRssMiB, last: last.podRssMiB, growth: growth(first.podRssMiB, last.podRssMiB), slopeMiBPerHour: perHour(after.map((s) => s.podRssMiB)) },
    podHeapMiB: { afterWarmup: first.podHeapMiB, last: last.podHeapMiB, growth: growth(first.podHeapMiB, last.podHeapMiB), slopeMiBPerHour: perHour(after.map((s) => s.podHeapMiB)) },
    podHeapTotalMiB: { afterWarmup: first.podHeapTotalMiB, last: last.podHeapTotalMiB, growth: growth(first.podHeapTotalMiB, last.podHeapTotalMiB) },
    ...(traceGc ? { liveAfterGcMiB: { afterWarmup: first.liveAfterGcMiB, last: last.liveAfterGcMiB, growth: growth(first.liveAfterGcMiB, last.liveAfterGcMiB) } } : {}),
    agentProcessRssMiB: { afterWarmup: agentMax(first), last: agentMax(last), growth: growth(agentMax(first), agentMax(last)), slopeMiBPerHour: perHour(after.map(agentMax)), totalPerAgentMiB: Number(((last.agentRssMiB.reduce((a, b) => a + b, 0)) / env.BENCH_AGENTS).toFixed(2)) },
    unansweredRequests: unanswered,
    ...(podEnded ? { podEnded } : {}),
    ...(heapFiles.length ? { heapSnapshots: heapFiles } : {}),
    podCoresMean: Number((after.reduce((a, s) => a + s.podCores, 0) / after.length).toFixed(3)),
  };
  const grown = Object.keys({ ...first.kvByKind, ...last.kvByKind }).filter((k) => (last.kvByKind[k] ?? 0) !== (first.kvByKind[k] ?? 0));
  if (grown.length) console.log(`store rows that changed after warm-up (minute ${first.minute} → ${last.minute}): ${grown.map((k) => `/${k}/ ${first.kvByKind[k] ?? 0} → ${last.kvByKind[k] ?? 0}`).join(', ')}`);
  console.log(`growth after warm-up (minute ${first.minute} → ${last.minute}): pod RSS ${(results.podRssMiB.growth * 100).toFixed(1)} % (${results.podRssMiB.slopeMiBPerHour} MiB/h), pod heap ${(results.podHeapMiB.growth * 100).toFixed(1)} %, largest agent process RSS ${(results.agentProcessRssMiB.growth * 100).toFixed(1)} %`);
  console.log(JSON.stringify({ bench: 'soak', load: load(), results, samples }));
}

await main();
process.exit(0);
