/**
 * npm run bench:system — the system as a whole, default settings:
 *   (a) convergence: 1,000 replicas across 100 agents on one server pod (a real `server/main.ts`
 *       process, two workers unless --workers) and Postgres (embedded, fsync on): seconds from `POST /v1/apply`
 *       to the service reporting all replicas running. The agents are real `Agent`s
 *       (agent/agent.ts) on the fake runtime, talking HTTP to the pod, in load processes of
 *       their own (bench/support/agent-host.ts, BENCH_AGENT_WORKERS of them, 2 by default): in
 *       this process, 300 agents took a whole core and starved the bench's own polls.
 *   (b) node-loss recovery: the first node's agent, alone in its process, is killed (SIGKILL:
 *       no deregistration, its lease runs out) → all of its replicas running elsewhere under
 *       new ids, seconds, with the agents' default lease TTL (QUORUM.defaultTtlSeconds, 30 s) and 1 s grace.
 * The last line is JSON.
 *
 *   npx tsx bench/system.ts [--agents 100] [--replicas 1000] [--services 1] [--workers 2]   BENCH_AGENT_WORKERS=2
 *   --services S splits the replicas over S services (one .cca file of S blocks, one apply).
 *   BENCH_POD_PROFILE=DIR   the pod writes a V8 CPU profile into DIR when it stops
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type RunningPostgres } from '../db/postgres/embedded.js';
import pg_ from 'pg';
import { Proc } from '../demo/procs.js';
import { newRoleToken } from '../handlers/auth.js';
import { freePort } from '../test/support/postgres-server.js';
import { messageOf } from '../core/diagnostics/index.js';
import { workerTime, workerTimeJson, workerTimeText } from './support/worker-time.js';
import { QUORUM } from '../core/model/quorum.js';
import { numberArg, sleep } from './support/usage.js';
import { Milestones } from './support/milestones.js';
import { Workers } from './support/workers.js';
import type { HostVitals } from './support/agent-host.js';

type Json = Record<string, any>;

const arg = numberArg;
const AGENTS = arg('agents', 100);
const REPLICAS = arg('replicas', 1000);
const SERVICES = Math.max(1, Math.min(REPLICAS, arg('services', 1)));
/** The pod's step workers (`--workers`; a server's default is 4, the bench's history is at 2). */
const WORKERS = Math.max(1, Math.min(64, arg('workers', 2)));
/** One service keeps the name earlier figures were taken with. */
const SERVICE_NAMES = SERVICES === 1 ? ['bench'] : Array.from({ length: SERVICES }, (_, i) => `bench-${String(i).padStart(4, '0')}`);
const ZONES = ['a', 'b', 'c', 'd'];
const log = (l: string) => process.stderr.write(`${l}\n`);

const dir = mkdtempSync(join(tmpdir(), 'cca-bench-system-'));
const admin = newRoleToken('admin');
const joinToken = newRoleToken('join');
type HostMsg = { type: 'ready'; agents: number; registered: number } | { type: 'stopped' } | HostVitals;
const HOSTS = Math.max(1, Number(process.env.BENCH_AGENT_WORKERS ?? 2));
let hosts: Workers<HostMsg> | undefined;
let others: Workers<HostMsg> | undefined;
let pg: RunningPostgres | undefined;
let pod: Proc | undefined;
/** The agents' own view, summed over their processes (the victim's too until it is killed). */
function agentVitals(): { fencedNow: number; fencedEver: number; longestSinceKeepaliveMs: number; worstSinceKeepaliveMs: number; peerQuestions: number } {
  const vs = [...(others?.vitals() ?? []), ...(hosts?.vitals() ?? [])].filter((v): v is HostVitals => v.type === 'vitals');
  const sum = (f: (v: HostVitals) => number) => vs.reduce((n, v) => n + f(v), 0);
  const max = (f: (v: HostVitals) => number) => Math.max(0, ...vs.map(f));
  return { fencedNow: sum((v) => v.fencedNow), fencedEver: sum((v) => v.fencedEver), longestSinceKeepaliveMs: max((v) => v.longestSinceKeepaliveMs), worstSinceKeepaliveMs: max((v) => v.worstSinceKeepaliveMs), peerQuestions: sum((v) => v.peerQuestions) };
}
const vitalsText = () => {
  const v = agentVitals();
  return `agents fenced ${v.fencedNow} (ever ${v.fencedEver}), longest since a keepalive ${(v.longestSinceKeepaliveMs / 1000).toFixed(1)} s, peer questions ${v.peerQuestions}`;
};

async function waitFor<T>(what: string, f: () => Promise<T | undefined>, timeoutMs: number, everyMs = 100): Promise<T> {
  const start = performance.now();
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** docs/dba.md's sizing: rows and pg_total_relation_size (table + indexes + TOAST) per table, after VACUUM. */
async function tableSizes(url: string): Promise<{ table: string; rows: number; bytes: number }[]> {
  const c = new pg_.Client({ connectionString: url });
  await c.connect();
  try {
    const tables = ['cca_kv', 'cca_log', 'cca_lease', 'cca_meta', 'graphile_worker._private_jobs'];
    await c.query(`VACUUM ${tables.join(', ')}`);
    const out: { table: string; rows: number; bytes: number }[] = [];
    for (const table of tables) {
      const r = await c.query<{ rows: string; bytes: string }>(`SELECT (SELECT count(*) FROM ${table}) AS rows, pg_total_relation_size('${table}') AS bytes`);
      out.push({ table, rows: Number(r.rows[0]!.rows), bytes: Number(r.rows[0]!.bytes) });
    }
    const db = await c.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
    out.push({ table: 'database', rows: 0, bytes: Number(db.rows[0]!.bytes) });
    return out;
  } finally {
    await c.end();
  }
}
let sizing: { table: string; rows: number; bytes: number }[] = [];

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Connections to the benchmark's database now, by application (the pod's pools, this process's probes). */
async function connections(url: string): Promise<number> {
  const c = new pg_.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    return r.rows[0]!.n;
  } finally {
    await c.end();
  }
}
let peakConnections = 0;
const load = () => loadavg().map((x) => Number(x.toFixed(2)));

try {
  const pgPort = await freePort();
  pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), port: pgPort, persistent: false });
  const port = await freePort();
  const server = `http://127.0.0.1:${port}`;
  pod = new Proc('server', 'server/main.ts', ['--store', pg.url, '--port', String(port), '--workers', String(WORKERS)], {
    CCA_ADMIN_TOKEN: admin,
    CCA_JOIN_TOKEN: joinToken,
    // BENCH_POD_PROFILE=DIR: the pod writes a V8 CPU profile there when it exits (where its workers' time goes).
    ...(process.env.BENCH_POD_PROFILE
      ? { NODE_OPTIONS: `--import ${join(import.meta.dirname, 'cpu-profile.mjs')}`, CCA_CPU_PROFILE_DIR: process.env.BENCH_POD_PROFILE }
      : {}),
  });
  const api = async (method: string, path: string, body?: string): Promise<Json> => {
    const r = await fetch(`${server}${path}`, { method, headers: { authorization: `Bearer ${admin}`, ...(body ? { 'content-type': 'text/x-cca' } : {}) }, ...(body ? { body } : {}) });
    return (await r.json()) as Json;
  };
  const renewals = () => (pod!.output.match(/CCA-E0123/g) ?? []).length;
  await waitFor('the server', async () => ((await fetch(`${server}/readyz`)).ok ? true : undefined), 60_000);

  // Room for twice the replicas: 0.1 CPU / 32Mi each.
  const perNode = Math.ceil((2 * REPLICAS) / AGENTS);
  const names = Array.from({ length: AGENTS }, (_, n) => `n${String(n + 1).padStart(3, '0')}`);
  const host = (nodes: string[]) => ({ server, join: joinToken, nodes, zones: ZONES, cpuMillis: perNode * 100, memoryBytes: perNode * 32 * 2 ** 20 });
  // The victim of (b) alone in a process of its own, so that killing it kills that agent
  // only; started last: a node that dies while a membership version in which it was a
  // majority is in the history window (W = T + S + margin, 105 s) is held, not expired
  // (docs/fencing.md) — first alone in the cluster, it would be, for the first 105 s.
  const rest = names.slice(1);
  const restHosts = Array.from({ length: HOSTS }, (_, w) => rest.filter((_, i) => i % HOSTS === w)).filter((n) => n.length > 0);
  const agentsStarted = performance.now();
  if (restHosts.length > 0) {
    others = new Workers<HostMsg>('agent-host.ts', restHosts.map(host));
    await others.collect('ready', 600_000);
  }
  hosts = new Workers<HostMsg>('agent-host.ts', [host([names[0]!])]);
  await hosts.collect('ready', 120_000);
  const agentsRegistered = performance.now();
  await waitFor(`${AGENTS} ready nodes`, async () => {
    const nodes = (await api('GET', '/v1/nodes')).nodes as Json[];
    return nodes.filter((n) => n.state === 'ready').length === AGENTS ? true : undefined;
  }, 120_000, 250);
  // Registration: the hosts start their agents 10 at a time, each batch once the one before
  // registered; then the node controller marks every node ready (its own steps).
  const registration = { registeredSeconds: Number(((agentsRegistered - agentsStarted) / 1000).toFixed(2)), allReadySeconds: Number(((performance.now() - agentsStarted) / 1000).toFixed(2)) };
  const processes = hosts.pids.length + (others?.pids.length ?? 0);
  log(`${AGENTS} agents registered (fake runtime, ${processes} processes) ${registration.registeredSeconds} s after they started, all nodes ready after ${registration.allReadySeconds} s; server pod ${server}, Postgres (embedded, fsync on)`);

  // (a) convergence
  const spec = SERVICE_NAMES.map((name, i) => {
    const replicas = Math.floor(REPLICAS / SERVICES) + (i < REPLICAS % SERVICES ? 1 : 0);
    return `service ${name} {\n  image    = "busybox:1.35"\n  command  = ["sleep", "3600"]\n  replicas = ${replicas}\n  cpu      = 0.1\n  memory   = 32Mi\n}\n`;
  }).join('\n');
  /** The services' counts, summed (one service: its own status). */
  const counts = async (): Promise<{ replicas: number; placed: number; running: number }> => {
    const list = SERVICES === 1 ? [(await api('GET', '/v1/services/bench')).service as Json] : ((await api('GET', '/v1/services')).services as Json[]).filter((x) => SERVICE_NAMES.includes(x.name));
    const sum = (k: string) => list.reduce((n, x) => n + ((x?.[k] as number | undefined) ?? 0), 0);
    return { replicas: sum('replicas'), placed: sum('placed'), running: sum('running') };
  };
  const loadAtApply = load();
  const podCpu0 = cpuSeconds(pod.child.pid);
  const t0 = performance.now();
  const applied = await api('POST', '/v1/apply', spec);
  if (applied.error) throw new Error(`apply failed: ${JSON.stringify(applied.error)}`);
  let lastLog = t0;
  let maxRunning = 0;
  const milestones = new Milestones(['replicas', 'placed', 'running'] as const, REPLICAS, t0);
  await waitFor(`${REPLICAS} running`, async () => {
    const s = await counts();
    milestones.seen(performance.now(), s);
    maxRunning = Math.max(maxRunning, s.running);
    peakConnections = Math.max(peakConnections, await connections(pg!.url).catch(() => 0));
    if (performance.now() - lastLog >= 5_000) {
      lastLog = performance.now();
      // The nodes' states beside it: a cluster that does not settle shows churn here (nodes held unreachable, lost).
      const states = new Map<string, number>();
      for (const n of ((await api('GET', '/v1/nodes')).nodes ?? []) as Json[]) states.set(n.state, (states.get(n.state) ?? 0) + 1);
      log(`   +${((lastLog - t0) / 1000).toFixed(0)} s: ${s.running}/${REPLICAS} running, ${s.placed}/${REPLICAS} placed; nodes ${[...states].map(([k, v]) => `${v} ${k}`).join(', ')}; ${vitalsText()}`);
    }
    return s.running >= REPLICAS ? true : undefined;
  }, 300_000);
  const convergence = (performance.now() - t0) / 1000;
  const podCpuConvergence = cpuSeconds(pod.child.pid) - podCpu0;
  log(`   lease renewals after reaper silence (CCA-E0123) during convergence: ${renewals()}; ${vitalsText()}`);
  const fencedDuringConvergence = agentVitals().fencedEver;
  log(`   seconds after the apply at which each count first reached a share of ${REPLICAS} (status polls): ${milestones.text()}`);
  log(`(a) convergence: ${REPLICAS} replicas${SERVICES > 1 ? ` in ${SERVICES} services` : ''} on ${AGENTS} agents, apply → all running in ${convergence.toFixed(2)} s; pod CPU meanwhile ${podCpuConvergence.toFixed(1)} s; peak Postgres connections ${peakConnections}; load average ${loadAtApply.join(' ')} at apply`);
  // Let the agents' reports settle before the next measurement.
  await sleep(3_000);
  sizing = await tableSizes(pg.url);
  log(`sizing after convergence (${REPLICAS} replicas, ${AGENTS} nodes): ${sizing.map((t) => `${t.table} ${t.rows} rows ${(t.bytes / 1024).toFixed(0)} kB`).join('; ')}`);

  // (b) node-loss recovery
  const replicas = async () => (await api('GET', SERVICES === 1 ? '/v1/replicas?service=bench' : '/v1/replicas')).replicas as Json[];
  const all = await replicas();
  const victimName = names[0]!;
  const victims = all.filter((r) => r.node === victimName && r.state === 'running').map((r) => r.id as string);
  // What the pod's job queue holds (graphile-worker): the lease reaper is one of its tasks.
  const queue = async (): Promise<string> => {
    const c = new pg_.Client({ connectionString: pg!.url });
    try {
      await c.connect();
      // Grouped by task and controller (a step's job key is `controller:subject`), so a
      // controller that keeps the workers busy shows by name.
      const r = await c.query(
        `select task_identifier || coalesce(' ' || nullif(split_part(key, ':', 1), task_identifier), '') t, count(*)::int n, count(locked_at)::int locked, coalesce(round(extract(epoch from (now() - min(run_at))))::int, 0) late from graphile_worker.jobs where run_at <= now() group by 1 order by 1`,
      );
      return r.rows.map((x: Json) => `${x.t} ${x.n} due (${x.locked} running, oldest ${x.late} s late)`).join('; ') || 'empty';
    } catch (e) {
      return `unreadable: ${String(e)}`;
    } finally {
      await c.end().catch(() => undefined);
    }
  };
  const renewalsBefore = renewals();
  // The victim's lease as the store holds it: its end is when the node controller may first
  // judge it (a keepalive sent before the kill may still land, so it is re-read until gone).
  const leaseWatch = victimLease(pg.url, victimName);
  await leaseWatch.read();
  const t1 = performance.now();
  const stoppedEpochMs = Date.now();
  process.kill(hosts.pids[0]!, 'SIGKILL'); // no deregistration: the lease runs out
  const stoppedAt = performance.now();
  let lostAt: number | undefined;
  let expiredAt: number | undefined;
  let lastLog1 = t1;
  const recovered = await waitFor(`${victims.length} replicas of ${victimName} running elsewhere`, async () => {
    const n = ((await api('GET', '/v1/nodes')).nodes as Json[]).find((x) => x.name === victimName);
    if (lostAt === undefined && n?.state === 'lost') lostAt = performance.now();
    if (expiredAt === undefined && n?.registered === false) expiredAt = performance.now();
    const rs = (await replicas()).filter((r) => r.state === 'running');
    if (performance.now() - lastLog1 >= 5_000) {
      lastLog1 = performance.now();
      log(`   +${((lastLog1 - t1) / 1000).toFixed(0)} s: ${victimName} ${expiredAt === undefined ? 'lease live' : 'lease expired'}, ${lostAt === undefined ? 'not yet lost' : 'lost'}, ${rs.length}/${REPLICAS} running, ${rs.filter((r) => r.node === victimName).length} on ${victimName}; lease renewals after reaper silence so far: ${renewals() - renewalsBefore}; job queue: ${await queue()}; ${vitalsText()}`);
    }
    await leaseWatch.read();
    maxRunning = Math.max(maxRunning, rs.length);
    return rs.length >= REPLICAS && !rs.some((r) => r.node === victimName || victims.includes(r.id)) ? true : undefined;
  }, 90_000).catch((e: Error) => {
    log(`(b) node-loss recovery FAILED: ${e.message}; lease renewals after reaper silence (CCA-E0123) meanwhile: ${renewals() - renewalsBefore}`);
    process.exitCode = 1;
    return false;
  });
  const recovery = (performance.now() - t1) / 1000;
  // Where the workers' time went: step count and seconds per controller (the pod's /metrics).
  const steps = await workerTime(server);
  log(`worker time by controller: ${workerTimeText(steps)}`);
  const timeline = await recoveryTimeline(pg.url, stoppedEpochMs);
  await leaseWatch.close();
  log(`   the recovery's decisions, seconds after the agent stopped (first–last, count): ${timeline.map((x) => `${x.what} ${x.first}–${x.last} (${x.count})`).join('; ')}`);
  const lease = leaseWatch.seen(stoppedEpochMs, QUORUM.defaultTtlSeconds);
  const judged = timeline.find((x) => x.what === 'node node-lost')?.first;
  if (lease) log(`   the victim's lease: last renewed ${lease.renewedBeforeStopSeconds.toFixed(2)} s before the agent stopped, so silent for its TTL (${QUORUM.defaultTtlSeconds} s) ${lease.silentForTtlAfterStopSeconds.toFixed(2)} s after the stop; node declared lost ${judged === undefined ? '?' : `${judged.toFixed(2)} s after the stop, ${(judged - lease.silentForTtlAfterStopSeconds).toFixed(2)} s after that`}`);
  if (recovered) log(`(b) node-loss recovery: ${victims.length} replicas of ${victimName} running elsewhere ${recovery.toFixed(2)} s after the agent stopped (node lost after ${lostAt === undefined ? '?' : ((lostAt - stoppedAt) / 1000).toFixed(2)} s; lease TTL ${QUORUM.defaultTtlSeconds} s)`);
  process.stdout.write(`${JSON.stringify({
    bench: 'system', store: 'postgres (embedded, fsync on)', serverPods: 1, workers: WORKERS, agents: AGENTS, services: SERVICES, agentHost: `${hosts.pids.length + (others?.pids.length ?? 0)} processes (the victim alone in one), fake runtime`, replicas: REPLICAS,
    convergenceSeconds: Number(convergence.toFixed(3)), convergenceMilestones: milestones.json(),
    podCpuSecondsDuringConvergence: Number(podCpuConvergence.toFixed(2)), peakPostgresConnections: peakConnections,
    workerSeconds: workerTimeJson(steps),
    maxRunningSeen: maxRunning, leaseRenewalsAfterSilence: renewals(), sizing, registration,
    // Agents that stopped their workloads because their keepalives failed (the victim of (b) is killed, not fenced).
    agentVitals: { fencedDuringConvergence, fencedEver: agentVitals().fencedEver, longestSinceKeepaliveMs: agentVitals().worstSinceKeepaliveMs, peerQuestions: agentVitals().peerQuestions },
    loadAverage: { atApply: loadAtApply, atEnd: load() },
    recoveryTimeline: timeline, nodeLoss: { leaseTtlSeconds: QUORUM.defaultTtlSeconds, replicasLost: victims.length, recovered, recoverySeconds: recovered ? Number(recovery.toFixed(3)) : null, expiredAfterSeconds: expiredAt === undefined ? null : Number(((expiredAt - stoppedAt) / 1000).toFixed(3)), lostAfterSeconds: lostAt === undefined ? null : Number(((lostAt - stoppedAt) / 1000).toFixed(3)), lease: lease ?? null, judgedAfterSilentForTtlSeconds: lease && judged !== undefined ? Number((judged - lease.silentForTtlAfterStopSeconds).toFixed(3)) : null },
  })}\n`);
} catch (e) {
  log(`bench:system failed: ${messageOf(e)}`);
  if (pod) log(`--- server output (CCA-E0123 lines: ${(pod.output.match(/CCA-E0123/g) ?? []).length}) ---\n${pod.output.replace(/.*CCA-E0123.*\n.*\n/g, '').slice(-3000)}`);
  process.exitCode = 1;
} finally {
  await Promise.allSettled([hosts?.stop(5_000), others?.stop(5_000)]);
  await pod?.kill('SIGTERM');
  await pg?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(process.exitCode ?? 0);

/**
 * Follows one node's registration lease in the store (cca_lease, by the node record's lease)
 * until it is gone, keeping the latest renewal seen (its end less its TTL; a keepalive sent
 * before the kill may still land): the node controller may judge the node only once it has
 * been silent for its TTL since, so this separates how long before the kill the agent's last
 * keepalive fell from how late the controller judged. A diagnostic of the bench's own, read
 * from the database directly.
 */
function victimLease(url: string, node: string) {
  const c = new pg_.Client({ connectionString: url });
  const connected = c.connect();
  let last: { endsAtMs: number; ttlSeconds: number } | undefined;
  let gone = false;
  return {
    async read(): Promise<void> {
      if (gone) return;
      await connected;
      const r = await c.query<{ ends: string; ttl: string }>(
        `select (extract(epoch from l.expires_at) * 1000)::float8 ends, l.ttl from cca_lease l join cca_kv k on k.lease = l.id where k.key = $1`,
        [`/nodes/${node}`],
      );
      const row = r.rows[0];
      if (!row) gone = last !== undefined;
      else last = { endsAtMs: Number(row.ends), ttlSeconds: Number(row.ttl) };
    },
    /** When it was last renewed, and when the node's TTL of silence (not the store lease's: an API-registered node's is a day-long backstop) ran out. */
    seen(stoppedEpochMs: number, nodeTtlSeconds: number) {
      if (!last) return undefined;
      const renewedBeforeStopSeconds = (stoppedEpochMs - (last.endsAtMs - last.ttlSeconds * 1000)) / 1000;
      return { storeLeaseTtlSeconds: last.ttlSeconds, renewedBeforeStopSeconds: Number(renewedBeforeStopSeconds.toFixed(3)), silentForTtlAfterStopSeconds: Number((nodeTtlSeconds - renewedBeforeStopSeconds).toFixed(3)) };
    },
    close: () => c.end().catch(() => undefined),
  };
}

/**
 * Where a node loss's time went: the decisions written after the agent stopped, by kind and
 * tag (a decision's id begins with its time, 13 digits of ms: jobs/ids.ts), first and last
 * seconds after the stop. Read from the database directly: a diagnostic of the bench's own.
 */
async function recoveryTimeline(url: string, stoppedEpochMs: number): Promise<{ what: string; first: number; last: number; count: number }[]> {
  const c = new pg_.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ key: string }>(`select key from cca_kv where key like '/decisions/%' and split_part(key, '/', 5) >= $1`, [String(stoppedEpochMs).padStart(13, '0')]);
    const by = new Map<string, number[]>();
    for (const { key } of r.rows) {
      const [, , kind, , id] = key.split('/');
      const at = Number(id!.slice(0, 13));
      const what = `${kind} ${id!.slice(14).replace(/^ep-.*/, 'ep')}`;
      by.set(what, [...(by.get(what) ?? []), (at - stoppedEpochMs) / 1000]);
    }
    return [...by].map(([what, ts]) => ({ what, first: Number(Math.min(...ts).toFixed(2)), last: Number(Math.max(...ts).toFixed(2)), count: ts.length })).sort((a, b) => a.first - b.first);
  } finally {
    await c.end();
  }
}
