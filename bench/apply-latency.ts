/**
 * npm run bench:apply-latency — do user writes wait on controller steps? `cca apply`
 * latency (the dry-run diff and the apply, the two requests `cca apply --yes` sends) on an
 * idle cluster, then while a rolling update replaces every replica of a large service.
 * One real server pod (`server/main.ts`, two workers) on Postgres (embedded, fsync on, or
 * DATABASE_URL); the agents are `Agent`s on the fake runtime in two load-generator processes
 * (bench/support/agent-host.ts), so the latencies measured here are not this process's queue.
 * Prints a table, where the workers' time went during the roll, and, last, one JSON line
 * (with the load average).
 *
 *   npx tsx bench/apply-latency.ts [--agents 100] [--replicas 1000] [--samples 100] [--surge 100] [--pool-size 10]
 *   BENCH_POD_PROFILE=DIR   the pod writes a V8 CPU profile into DIR when it stops
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import { messageOf } from '../core/diagnostics/index.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../db/postgres/embedded.js';
import { Proc } from '../demo/procs.js';
import { newRoleToken } from '../handlers/auth.js';
import { freePort } from '../test/support/postgres-server.js';
import { Workers } from './support/workers.js';
import { workerTime, workerTimeJson, workerTimeSince, workerTimeText } from './support/worker-time.js';
import { commitReading, commitsSince, commitsText, type CommitSummary } from './support/commit-batches.js';
import { numberArg, pct, sleep } from './support/usage.js';

// any: the API's answers, read loosely (as bench/system.ts does).
type Json = Record<string, any>;

const arg = numberArg;
const AGENTS = arg('agents', 100);
const REPLICAS = arg('replicas', 1000);
const SAMPLES = arg('samples', 100);
const SURGE = arg('surge', 100);
/** The pod's --pool-size (the server's default is 10). */
const POOL_SIZE = arg('pool-size', 10);
const GAP_MS = 50;
const log = (l: string) => process.stderr.write(`${l}\n`);

async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const start = performance.now();
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

const dir = mkdtempSync(join(os.tmpdir(), 'cca-bench-apply-'));
const admin = newRoleToken('admin');
const joinToken = newRoleToken('join');
type HostMsg = { type: 'ready'; agents: number; registered: number } | { type: 'stopped' };
let hosts: Workers<HostMsg> | undefined;
let pg: RunningPostgres | undefined;
let pod: Proc | undefined;

/** Every replica replaced and running, and the roll says so. */
const rolled = (s: Json) => s.updated >= REPLICAS && s.running >= REPLICAS && (!s.rollout || s.rollout.state === 'complete');

const spec = (version: string) =>
  `service bench {\n  image    = "busybox:1.35"\n  command  = ["sleep", "3600"]\n  env      = { VERSION = "${version}" }\n  replicas = ${REPLICAS}\n  cpu      = 0.1\n  memory   = 32Mi\n  update { max_surge = ${SURGE} max_unavailable = 0 }\n}\n`;

try {
  const storeUrl = process.env.DATABASE_URL ?? (pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: await freePort(), persistent: false })).url;
  const port = await freePort();
  const server = `http://127.0.0.1:${port}`;
  pod = new Proc('server', 'server/main.ts', ['--store', storeUrl, '--port', String(port), '--workers', '2', '--pool-size', String(POOL_SIZE)], {
    CCA_ADMIN_TOKEN: admin,
    CCA_JOIN_TOKEN: joinToken,
    // BENCH_POD_PROFILE=DIR: the pod writes a V8 CPU profile there when it exits (as in bench:system).
    ...(process.env.BENCH_POD_PROFILE ? { NODE_OPTIONS: `--import ${join(import.meta.dirname, 'cpu-profile.mjs')}`, CCA_CPU_PROFILE_DIR: process.env.BENCH_POD_PROFILE } : {}),
  });
  const call = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const r = await fetch(`${server}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const answer = (await r.json()) as Json;
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(answer)}`);
    return answer;
  };
  const apply = (text: string, dryRun = false) => call('POST', `/v1/apply${dryRun ? '?dry_run=1' : ''}`, { files: [{ name: 'bench.cca', text }] });
  await until('the server', async () => ((await fetch(`${server}/readyz`)).ok ? true : undefined), 60_000);

  // Room for twice the replicas (the surge needs some): 0.1 CPU / 32Mi each.
  const perNode = Math.ceil((2 * REPLICAS) / AGENTS);
  const names = Array.from({ length: AGENTS }, (_, n) => `n${String(n + 1).padStart(3, '0')}`);
  hosts = new Workers<HostMsg>('agent-host.ts', [0, 1].map((w) => ({
    server, join: joinToken, nodes: names.filter((_, i) => i % 2 === w), zones: ['a'],
    cpuMillis: perNode * 100, memoryBytes: perNode * 32 * 2 ** 20,
  })));
  await hosts.collect('ready', 300_000);
  let ready = 0;
  await until(`${AGENTS} ready nodes`, async () => {
    ready = ((await call('GET', '/v1/nodes')).nodes as Json[]).filter((n) => n.state === 'ready').length;
    return ready === AGENTS ? true : undefined;
  }, 300_000).catch((e: Error) => {
    throw new Error(`${e.message} (${ready} ready)`);
  });
  const status = async () => (await call('GET', '/v1/services/bench')).service as Json;
  const applied = performance.now();
  await apply(spec('v1'));
  await until(`${REPLICAS} running`, async () => ((await status()).running >= REPLICAS ? true : undefined), 600_000);
  const converge = (performance.now() - applied) / 1000;
  log(`${REPLICAS} replicas running on ${AGENTS} agents, ${converge.toFixed(1)} s after the apply`);
  await sleep(2_000); // the agents' first reports settle

  /** `cca apply --yes` of a small service, as the CLI sends it: the dry-run diff (reads only), then the apply (the write). */
  let n = 0;
  type Probe = { total: number; dry: number; write: number };
  const probe = async (): Promise<Probe> => {
    const text = `service probe {\n  image    = "busybox:1.35"\n  replicas = 0\n  env      = { N = "${n++}" }\n}\n`;
    const t = performance.now();
    await apply(text, true);
    const t1 = performance.now();
    await apply(text);
    const t2 = performance.now();
    return { total: t2 - t, dry: t1 - t, write: t2 - t1 };
  };
  /**
   * The floors beside each apply, from this process: a `SELECT 1` on a connection of our own
   * (what any request to Postgres pays on this machine at that moment: scheduling, not the
   * store) and the pod's GET /healthz (its event loop and HTTP, no store).
   */
  const direct = new PgClient({ connectionString: storeUrl, application_name: 'bench-floor' });
  await direct.connect();
  const floors = async (): Promise<{ select1: number; healthz: number }> => {
    const t = performance.now();
    await direct.query('SELECT 1');
    const t1 = performance.now();
    await fetch(`${server}/healthz`).then((r) => r.text());
    return { select1: t1 - t, healthz: performance.now() - t1 };
  };
  type Measured = { lat: number[]; dry: number[]; write: number[]; select1: number[]; healthz: number[]; commits: CommitSummary };
  /** Applies while `more()`, the floors beside them, and what the store's write batches did meanwhile. */
  const measure = async (more: () => Promise<boolean>): Promise<Measured> => {
    const got: Probe[] = [];
    const floor: { select1: number; healthz: number }[] = [];
    const before = await commitReading(server);
    while (got.length < SAMPLES && (await more())) {
      got.push(await probe());
      floor.push(await floors());
      await sleep(GAP_MS);
    }
    const commits = commitsSince(await commitReading(server), before);
    return {
      lat: got.map((p) => p.total), dry: got.map((p) => p.dry), write: got.map((p) => p.write),
      select1: floor.map((f) => f.select1), healthz: floor.map((f) => f.healthz), commits,
    };
  };
  const p50p99 = (xs: number[]) => `${pct(xs, 50).toFixed(1)}/${pct(xs, 99).toFixed(1)} ms`;
  const split = (m: Measured) =>
    `dry run p50/p99 ${p50p99(m.dry)}, write ${p50p99(m.write)}; floors: SELECT 1 ${p50p99(m.select1)}, GET /healthz ${p50p99(m.healthz)}`;

  const idleRun = await measure(async () => true);
  const idle = idleRun.lat;
  log(`idle: ${idle.length} applies, p50 ${pct(idle, 50).toFixed(1)} ms, p99 ${pct(idle, 99).toFixed(1)} ms (${split(idleRun)}); ${commitsText(idleRun.commits)}`);

  const rollStart = performance.now();
  const timeBefore = await workerTime(server);
  await apply(spec('v2'));
  // Sample inside the roll: from its first replaced replica on.
  await until('the roll to begin', async () => {
    const s = await status();
    return s.updated > 0 || rolled(s) ? true : undefined;
  }, 300_000);
  const rollingRun = await measure(async () => {
    const s = await status();
    return !rolled(s);
  });
  const rolling = rollingRun.lat;
  const updatedAtEnd = (await status()).updated as number;
  log(`during the roll: ${rolling.length} applies, p50 ${pct(rolling, 50).toFixed(1)} ms, p99 ${pct(rolling, 99).toFixed(1)} ms (${split(rollingRun)}); ${updatedAtEnd}/${REPLICAS} replaced when sampling ended; ${commitsText(rollingRun.commits)}`);
  let lastLog = performance.now();
  const roll = await until('the roll to finish', async () => {
    const s = await status();
    if (performance.now() - lastLog > 5_000) {
      lastLog = performance.now();
      log(`   rolling: ${JSON.stringify({ running: s.running, updated: s.updated, rollout: s.rollout })}`);
    }
    return rolled(s) ? (performance.now() - rollStart) / 1000 : undefined;
  }, 300_000).catch(() => null); // reported as unfinished

  const rollTime = workerTimeSince(await workerTime(server), timeBefore);
  await direct.end();
  const phaseJson = (m: Measured) => ({
    n: m.lat.length, p50Ms: pct(m.lat, 50), p99Ms: pct(m.lat, 99), dryRunP99Ms: pct(m.dry, 99), writeP99Ms: pct(m.write, 99),
    select1P50Ms: pct(m.select1, 50), select1P99Ms: pct(m.select1, 99), healthzP99Ms: pct(m.healthz, 99), commits: m.commits,
  });
  const load = os.loadavg().map((x) => Number(x.toFixed(2)));
  const rows: [string, string, string, string][] = [
    ['phase', 'applies', 'p50 ms', 'p99 ms'],
    ['idle', String(idle.length), pct(idle, 50).toFixed(1), pct(idle, 99).toFixed(1)],
    [`rolling update of ${REPLICAS}`, String(rolling.length), pct(rolling, 50).toFixed(1), pct(rolling, 99).toFixed(1)],
  ];
  console.log(`apply latency: one pod (2 workers, pool ${POOL_SIZE}), ${AGENTS} agents (fake runtime, in 2 processes), ${REPLICAS} replicas, max_surge ${SURGE}; ${os.cpus().length} cores, load ${load.join(' ')}`);
  for (const r of rows) console.log(`${r[0].padEnd(28)} ${r[1].padStart(8)} ${r[2].padStart(8)} ${r[3].padStart(8)}`);
  console.log(`apply → all ${REPLICAS} running took ${converge.toFixed(1)} s`);
  console.log(`the roll ${roll === null ? 'had not finished 300 s after the samples' : `took ${roll.toFixed(1)} s`}; ${rolling.length < SAMPLES ? 'it ended before the samples did' : `${updatedAtEnd}/${REPLICAS} replaced when the samples ended`}`);
  console.log(`the two requests: idle ${split(idleRun)}; rolling ${split(rollingRun)}`);
  console.log(`store write batches while idle: ${commitsText(idleRun.commits)}`);
  console.log(`store write batches while rolling: ${commitsText(rollingRun.commits)}`);
  console.log(`worker time during the roll: ${workerTimeText(rollTime)}`);
  console.log(JSON.stringify({
    bench: 'apply-latency', agents: AGENTS, replicas: REPLICAS, surge: SURGE, samples: SAMPLES, poolSize: POOL_SIZE,
    idle: phaseJson(idleRun),
    rolling: { ...phaseJson(rollingRun), replacedWhenSamplingEnded: updatedAtEnd },
    convergeSeconds: converge, rollSeconds: roll, rollWorkerSeconds: workerTimeJson(rollTime), loadAverage: load,
  }));
} catch (e) {
  log(`bench:apply-latency failed: ${messageOf(e)}`);
  if (pod) log(`--- server output ---\n${pod.output.slice(-3000)}`);
  process.exitCode = 1;
} finally {
  await hosts?.stop(5_000);
  await pod?.kill('SIGTERM');
  await pg?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(process.exitCode ?? 0);
