/**
 * npm run bench:server — one server pod (a real process) on Postgres, with the load generated
 * in separate processes so that what is measured is the pod, not the generator:
 *   (a) SSE watch fan-out: BENCH_WATCHERS watchers in BENCH_WATCH_WORKERS processes (streaming
 *       scanner, one connection each, reader tokens of at most 64 streams each), BENCH_RATE
 *       puts/s for BENCH_SECONDS from this process; commit → event p50/p99 on the machine's
 *       monotonic clock, the pod's CPU per 10,000 events delivered (from /proc/<pid>/stat);
 *   (b) BENCH_AGENTS real agents (fake runtime) in BENCH_AGENT_WORKERS processes, keeping alive
 *       and long-polling: the pod's CPU over BENCH_SECONDS with nothing else running (per agent
 *       and second too), its RSS, each agent process's RSS;
 *   (c) then apply latency under that load (the pod's CPU over that window reported apart: the
 *       applies wake controllers).
 * BENCH_PROFILE=DIR writes the pod's CPU profile (--cpu-prof) there. Prints a table and, last,
 * one JSON line with the figures and the load average.
 *
 *   BENCH_WATCHERS=1000  BENCH_RATE=100 (writes/s)  BENCH_SECONDS=10  BENCH_AGENTS=1000
 *   BENCH_SETTLE_SECONDS=60 (after the last registration, before the agents-alone window; default min(10, BENCH_SECONDS))
 *   BENCH_WARMUP_SECONDS=2 (writes at BENCH_RATE before the measured window: their events are
 *     delivered and counted, their latency and the pod's CPU meanwhile are not; a fresh pod's
 *     first fan-outs run unoptimised code, and the few hundred ms they take were the whole p99)
 */
import { z } from 'zod';
import { PostgresStore } from '../db/postgres/store.js';
import { monoMs } from './support/clock.js';
import { merge, percentile, type Histogram } from './support/latency.js';
import { startPod, type BenchPod } from './support/pod.js';
import { load, mib, pct, sleep, usage } from './support/usage.js';
import { Workers } from './support/workers.js';

const env = z
  .object({
    BENCH_WATCHERS: z.coerce.number().int().nonnegative().default(1000),
    BENCH_RATE: z.coerce.number().positive().default(100),
    BENCH_SECONDS: z.coerce.number().positive().default(10),
    BENCH_AGENTS: z.coerce.number().int().nonnegative().default(1000),
    BENCH_WATCH_WORKERS: z.coerce.number().int().positive().default(4),
    BENCH_AGENT_WORKERS: z.coerce.number().int().positive().default(4),
    BENCH_PROFILE: z.string().optional(),
    /** Seconds between the last registration and the agents-alone window (the first reports and polls settle). */
    BENCH_SETTLE_SECONDS: z.coerce.number().nonnegative().optional(),
    BENCH_WARMUP_SECONDS: z.coerce.number().nonnegative().default(2),
  })
  .parse(process.env);

/** The pod's default cap of streams per token (--max-streams): one reader token per this many watchers. */
const STREAMS_PER_TOKEN = 64;

type WatchMsg = { type: 'ready' } | { type: 'report'; frames: number; fewest: number; outOfOrder: number; errors: number; retries: number; latency: Histogram };
type AgentMsg = { type: 'ready'; agents: number; registered: number } | { type: 'stopped' };

const results: Record<string, number> = {};

async function post(pod: BenchPod, path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${pod.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${pod.admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

const split = <T>(xs: T[], n: number): T[][] => Array.from({ length: n }, (_, w) => xs.filter((_, i) => i % n === w)).filter((g) => g.length > 0);

async function fanOut(pod: BenchPod, store: PostgresStore): Promise<void> {
  const W = env.BENCH_WATCHERS;
  const from = (await store.revision()) + 1;
  const groups = split([...Array(W).keys()], Math.min(env.BENCH_WATCH_WORKERS, W));
  // A token's cap is per pod: each process gets reader tokens of its own, one per 64 watchers.
  let n = 0;
  const configs = [];
  for (const g of groups) {
    const tokens: string[] = [];
    for (let i = 0; i < Math.ceil(g.length / STREAMS_PER_TOKEN); i++) tokens.push((await post(pod, '/v1/tokens', { role: 'reader', name: `bench-watch-${n++}` })).token as string);
    configs.push({ url: pod.url, tokens, prefix: '/bench/', from, watchers: g.length });
  }
  const workers = new Workers<WatchMsg>('watch-worker.ts', configs);
  try {
    await workers.collect('ready', 900_000);
    // Warm-up: written and delivered like the rest, but no commit times are sent for them.
    const warmup = Math.round(env.BENCH_RATE * env.BENCH_WARMUP_SECONDS);
    const tw = performance.now();
    const warmWrites: Promise<unknown>[] = [];
    for (let i = 0; i < warmup; i++) {
      const wait = tw + (i * 1000) / env.BENCH_RATE - performance.now();
      if (wait > 1) await sleep(wait);
      warmWrites.push(store.put(`/bench/warm-${i % 500}`, `w${i}`));
    }
    await Promise.all(warmWrites);
    const total = Math.round(env.BENCH_RATE * env.BENCH_SECONDS);
    const expected = warmup + total;
    let pending: [number, number][] = [];
    const flush = () => {
      if (pending.length === 0) return;
      workers.send({ type: 'commits', commits: pending } as { type: string });
      pending = [];
    };
    const flusher = setInterval(flush, 20);
    const cpu0 = await usage(pod.pid);
    const gen0 = await Promise.all(workers.pids.map(usage));
    const t0 = performance.now();
    const writes: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / env.BENCH_RATE - performance.now();
      if (wait > 1) await sleep(wait);
      writes.push(store.put(`/bench/${i % 500}`, `v${i}`).then(({ revision }) => void pending.push([revision, monoMs()])));
    }
    await Promise.all(writes);
    const writeSeconds = (performance.now() - t0) / 1000;
    clearInterval(flusher);
    flush();
    // Wait while events still arrive: until every watcher has all, or 30 s pass with none new.
    let reports: Extract<WatchMsg, { type: 'report' }>[] = [];
    let seen = -1;
    let lastNew = performance.now();
    for (;;) {
      workers.send({ type: 'report' });
      reports = await workers.collect('report', 60_000);
      const got = reports.reduce((a, r) => a + r.frames, 0);
      if (got > seen) [seen, lastNew] = [got, performance.now()];
      if (reports.every((r) => r.fewest >= expected) || performance.now() - lastNew > 30_000) break;
      await sleep(250);
    }
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = await usage(pod.pid);
    const gen1 = await Promise.all(workers.pids.map(usage));
    const delivered = reports.reduce((a, r) => a + r.frames, 0);
    const latency = reports.reduce((h, r) => merge(h, r.latency), {} as Histogram);
    const podCpu = cpu1.cpu - cpu0.cpu;
    results['watch.watchers'] = W;
    results['watch.writes_per_s'] = total / writeSeconds;
    results['watch.warmup_seconds'] = env.BENCH_WARMUP_SECONDS;
    results['watch.events_delivered'] = delivered;
    results['watch.delivered_fraction'] = delivered / (expected * W);
    results['watch.out_of_order'] = reports.reduce((a, r) => a + r.outOfOrder, 0);
    results['watch.errors'] = reports.reduce((a, r) => a + r.errors, 0);
    results['watch.connect_retries'] = reports.reduce((a, r) => a + r.retries, 0);
    results['watch.p50_ms'] = percentile(latency, 50);
    results['watch.p99_ms'] = percentile(latency, 99);
    results['watch.pod_cpu_cores'] = podCpu / elapsed;
    // The measured writes' events (the warm-up's were delivered before the CPU window began).
    const measured = delivered - warmup * W;
    results['watch.pod_cpu_s_per_10k_events'] = measured > 0 ? (podCpu * 10_000) / measured : NaN;
    results['watch.generator_cpu_cores'] = gen1.reduce((a, g, i) => a + g.cpu - gen0[i]!.cpu, 0) / elapsed;
    results['watch.pod_rss_mib'] = mib(cpu1.rss);
  } finally {
    await workers.stop();
  }
}

async function agentsAndApply(pod: BenchPod): Promise<void> {
  const nodes = Array.from({ length: env.BENCH_AGENTS }, (_, i) => `bench-${String(i + 1).padStart(4, '0')}`);
  const groups = split(nodes, Math.min(env.BENCH_AGENT_WORKERS, env.BENCH_AGENTS));
  const workers = new Workers<AgentMsg>(
    'agent-host.ts',
    groups.map((g) => ({ server: pod.url, join: pod.join, nodes: g, zones: ['z0', 'z1', 'z2'], cpuMillis: 4000, memoryBytes: 2 ** 33 })),
  );
  try {
    const ready = await workers.collect('ready', 1_800_000);
    results['agents.registered'] = ready.reduce((a, r) => a + r.registered, 0);
    // Registration is done; let the node controller and the agents' first reports settle.
    await sleep(env.BENCH_SETTLE_SECONDS !== undefined ? env.BENCH_SETTLE_SECONDS * 1000 : Math.min(10_000, env.BENCH_SECONDS * 1000));
    // The agents alone first: the applies below wake controllers, whose steps the pod pays for too.
    const a0 = await usage(pod.pid);
    const ta = performance.now();
    await sleep(env.BENCH_SECONDS * 1000);
    const a1 = await usage(pod.pid);
    results['agents.pod_cpu_cores'] = (a1.cpu - a0.cpu) / ((performance.now() - ta) / 1000);
    results['agents.pod_cpu_ms_per_agent_second'] = (results['agents.pod_cpu_cores'] * 1000) / env.BENCH_AGENTS;
    const b0 = await usage(pod.pid);
    const tb = performance.now();
    // (c) apply latency under the agents' load, spread over the window.
    const applyLat: number[] = [];
    for (let i = 0; i < 40; i++) {
      const s = performance.now();
      const r = await fetch(`${pod.url}/v1/apply`, {
        method: 'POST',
        headers: { authorization: `Bearer ${pod.admin}`, 'content-type': 'text/x-cca' },
        body: `service bench { image = "busybox:1.35"\n replicas = 0\n env = { N = "${i}" } }\n`,
      });
      await r.json();
      applyLat.push(performance.now() - s);
      await sleep((env.BENCH_SECONDS * 1000) / 40);
    }
    const b1 = await usage(pod.pid);
    const seconds = (performance.now() - tb) / 1000;
    const agentRss = await Promise.all(workers.pids.map(async (p) => (await usage(p)).rss));
    results['agents'] = env.BENCH_AGENTS;
    results['agents.processes'] = groups.length;
    results['agents_and_applies.pod_cpu_cores'] = (b1.cpu - b0.cpu) / seconds;
    results['agents.pod_rss_mib'] = mib(b1.rss);
    results['agents.process_rss_mib_max'] = mib(Math.max(...agentRss));
    results['agents.processes_rss_mib_total'] = mib(agentRss.reduce((a, b) => a + b, 0));
    results['apply.p50_ms'] = pct(applyLat, 50);
    results['apply.p99_ms'] = pct(applyLat, 99);
  } finally {
    await workers.stop();
  }
}

async function main() {
  const pod = await startPod('server', env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_PROFILE}`] : []);
  const store = await PostgresStore.open(pod.pgUrl);
  try {
    if (env.BENCH_WATCHERS > 0) await fanOut(pod, store);
    if (env.BENCH_AGENTS > 0) await agentsAndApply(pod);
  } finally {
    await store.close();
    await pod.stop();
  }
  console.log(`server benchmark: one pod; load generated in separate processes; load average ${load()}`);
  for (const [k, v] of Object.entries(results)) console.log(`${k.padEnd(34)} ${Number.isInteger(v) ? v : v.toFixed(2)}`);
  console.log(JSON.stringify({ bench: 'server', load: load(), settings: { watchers: env.BENCH_WATCHERS, rate: env.BENCH_RATE, seconds: env.BENCH_SECONDS, agents: env.BENCH_AGENTS }, results }));
}

await main();
process.exit(0);
