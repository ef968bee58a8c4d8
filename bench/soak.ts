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
 */
import { z } from 'zod';
import { startPod, type BenchPod } from './support/pod.js';
import { load, mib, sleep, usage } from './support/usage.js';
import { Workers } from './support/workers.js';

const env = z
  .object({
    BENCH_MINUTES: z.coerce.number().int().positive().default(30),
    BENCH_AGENTS: z.coerce.number().int().positive().default(100),
    BENCH_WORKERS: z.coerce.number().int().positive().default(4),
    BENCH_WARMUP_MINUTES: z.coerce.number().int().nonnegative().default(5),
    BENCH_MINUTE_MS: z.coerce.number().int().positive().default(60_000),
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
  podCores: number;
  agentRssMiB: number[];
  running: number;
  /** How long the pod took to answer GET /v1/services/soak. */
  answerMs: number;
  load: number;
}

/** `nodejs_heap_size_used_bytes` from the pod's /metrics (prom-client's default metrics). */
async function heapUsed(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(60_000) })).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN);
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

const spec = (replicas: number) => `service soak {\n  image    = "busybox:1.35"\n  command  = ["sleep", "3600"]\n  replicas = ${replicas}\n  cpu      = 0.1\n  memory   = 32Mi\n}\n`;

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
  const pod = await startPod('soak');
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
    console.log('minute  pod RSS MiB  pod heap MiB  pod cores  agent proc RSS MiB (mean / max)  running  answer ms  load');
    let cpu = (await usage(pod.pid)).cpu;
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
      const s: Sample = {
        minute,
        podRssMiB: mib(p.rss),
        podHeapMiB: mib(await heapUsed(pod.url).catch(() => NaN)),
        podCores: Number(((p.cpu - cpu) / ((now - t) / 1000)).toFixed(3)),
        agentRssMiB: agentRss.map(mib),
        running: svc?.running ?? -1,
        answerMs: Math.round(performance.now() - asked),
        load: load(),
      };
      cpu = p.cpu;
      t = now;
      samples.push(s);
      const mean = s.agentRssMiB.reduce((a, b) => a + b, 0) / s.agentRssMiB.length;
      console.log(
        `${String(minute).padStart(6)}  ${s.podRssMiB.toFixed(1).padStart(11)}  ${s.podHeapMiB.toFixed(1).padStart(12)}  ${s.podCores.toFixed(2).padStart(9)}  ${`${mean.toFixed(1)} / ${Math.max(...s.agentRssMiB).toFixed(1)}`.padStart(32)}  ${String(s.running).padStart(7)}  ${String(s.answerMs).padStart(9)}  ${s.load.toFixed(1)}`,
      );
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
    agentProcessRssMiB: { afterWarmup: agentMax(first), last: agentMax(last), growth: growth(agentMax(first), agentMax(last)), slopeMiBPerHour: perHour(after.map(agentMax)), totalPerAgentMiB: Number(((last.agentRssMiB.reduce((a, b) => a + b, 0)) / env.BENCH_AGENTS).toFixed(2)) },
    unansweredRequests: unanswered,
    ...(podEnded ? { podEnded } : {}),
    podCoresMean: Number((after.reduce((a, s) => a + s.podCores, 0) / after.length).toFixed(3)),
  };
  console.log(`growth after warm-up (minute ${first.minute} → ${last.minute}): pod RSS ${(results.podRssMiB.growth * 100).toFixed(1)} % (${results.podRssMiB.slopeMiBPerHour} MiB/h), pod heap ${(results.podHeapMiB.growth * 100).toFixed(1)} %, largest agent process RSS ${(results.agentProcessRssMiB.growth * 100).toFixed(1)} %`);
  console.log(JSON.stringify({ bench: 'soak', load: load(), results, samples }));
}

await main();
process.exit(0);
