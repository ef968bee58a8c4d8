/**
 * `npm run bench:scheduler`: place 10,000 replicas on 1,000 nodes (mixed sizes, 3 zones,
 * constraints on a third of the services) and report committed placements/s on
 * MemoryStore and PostgresStore, plus the pure placement function's decisions/s.
 * The last line is machine-readable JSON.
 *
 *   --replicas N --nodes N    shrink or grow the problem (defaults 10000 / 1000)
 *   DATABASE_URL=…            use that Postgres instead of an embedded one
 *   BENCH_NO_MIRROR=1         the step reads the store, not a read mirror
 *   BENCH_NO_HOOK=1           commits enqueue no controller jobs (a server pod's do)
 *   BENCH_NO_AHEAD=1          the step builds no txns ahead while others commit (a server pod's does)
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import pg_ from 'pg';
import os from 'node:os';
const load = () => os.loadavg().map((x) => Number(x.toFixed(2)));
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildKey, encodeFact, prefixOf } from '../core/keys.js';
import { serviceSpecSchema, type ServiceSpec } from '../core/model/service.js';
import { openStore } from '../db/index.js';
import { startEmbeddedPostgres } from '../db/postgres/embedded.js';
import type { StoreMirror } from '../db/mirror.js';
import type { Op, Store } from '../db/store.js';
import { startStepMirror } from '../jobs/step-mirror.js';
import { redactUrl } from '../db/postgres/errors.js';
import { createPool } from '../db/postgres/pool.js';
import { PostgresStore } from '../db/postgres/store.js';
import { controllers } from '../jobs/controllers/index.js';
import { migrateJobs } from '../jobs/graphile-migrate.js';
import { jobHook } from '../jobs/job-hook.js';
import { freePort } from '../test/support/postgres-server.js';
import { candidatesOf, demandOf } from '../jobs/controllers/scheduler/plan-placements.js';
import { place, type Candidate, type Demand, type Spread } from '../jobs/placement/place.js';
import { createPlacer } from '../jobs/placement/placer.js';
import { addResources } from '../jobs/placement/quantities.js';
import { schedulerWith } from '../jobs/controllers/scheduler/index.js';
import { readClusterView } from '../jobs/controllers/view.js';
import { listFacts } from '../jobs/facts.js';
import { Rng } from '../jobs/sim/rng.js';
import { SERVER_STEP_OPTIONS } from '../server/step-options.js';

const Gi = 1024 ** 3;
const Mi = 1024 ** 2;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const REPLICAS = arg('replicas', 10_000);
const NODES = arg('nodes', 1_000);
const PER_SERVICE = 20;
const CONCURRENCY = arg('concurrency', SERVER_STEP_OPTIONS.txnConcurrency);

function services(rng: Rng): ServiceSpec[] {
  return Array.from({ length: Math.ceil(REPLICAS / PER_SERVICE) }, (_, i) => {
    const constrained = i % 3 === 0;
    return serviceSpecSchema.parse({
      name: `svc${i}`,
      image: 'web:1',
      replicas: PER_SERVICE,
      resources: { cpuMillis: rng.pick([100, 250, 500, 1000]), memoryBytes: rng.pick([128, 256, 512, 1024]) * Mi },
      ...(constrained
        ? {
            placement: rng.pick([
              { require: [{ attribute: 'zone', op: 'in', values: ['a', 'b'] }] },
              { prefer: [{ constraint: { attribute: 'label.disk', op: '==', values: ['ssd'] }, weight: 50 }] },
              { restrict: [{ attribute: 'label.class', op: '==', values: ['spot'] }] },
              { require: [{ attribute: 'label.disk', op: '==', values: ['ssd'] }], spread: ['node'] },
            ]),
          }
        : {}),
    });
  });
}

/** Writes in chunks of one txn each, issued a few at a time. */
async function writeAll(store: Store, ops: Op[]): Promise<void> {
  const chunks: Op[][] = [];
  for (let i = 0; i < ops.length; i += 100) chunks.push(ops.slice(i, i + 100));
  for (let i = 0; i < chunks.length; i += 8) await Promise.all(chunks.slice(i, i + 8).map((success) => store.txn({ compare: [], success })));
}

/** The cluster as agents and the node controller would leave it: nodes registered and ready, replicas recorded. */
async function seed(store: Store): Promise<void> {
  const rng = new Rng(42);
  const nodeOps: Op[] = [];
  for (let i = 0; i < NODES; i++) {
    const name = `n${String(i).padStart(4, '0')}`;
    nodeOps.push({
      put: {
        key: buildKey('node', name),
        value: encodeFact('node', {
          name,
          zone: ['a', 'b', 'c'][i % 3]!,
          labels: { disk: rng.chance(0.5) ? 'ssd' : 'hdd', class: rng.chance(0.2) ? 'spot' : 'standard' },
          capacity: rng.pick([{ cpuMillis: 8_000, memoryBytes: 16 * Gi }, { cpuMillis: 16_000, memoryBytes: 32 * Gi }, { cpuMillis: 32_000, memoryBytes: 64 * Gi }]),
          images: { 'web:1': 'sha256:web1' },
        }),
      },
    });
  }
  await writeAll(store, nodeOps);
  const statusOps: Op[] = [];
  for (const kv of (await store.range({ prefix: prefixOf('node') })).kvs) {
    const name = kv.key.slice(prefixOf('node').length);
    statusOps.push({ put: { key: buildKey('nodeStatus', name), value: encodeFact('nodeStatus', { node: name, tenure: kv.createRevision, state: 'ready', since: 0 }) } });
  }
  await writeAll(store, statusOps);
  const replicaOps: Op[] = [];
  let n = 0;
  for (const s of services(rng)) {
    replicaOps.push({ put: { key: buildKey('service', s.name), value: encodeFact('service', s) } });
    for (let r = 0; r < s.replicas && n < REPLICAS; r++, n++) {
      const id = `${s.name}-${String(r).padStart(8, '0')}`;
      replicaOps.push({ put: { key: buildKey('replica', s.name, id), value: encodeFact('replica', { id, service: s.name, specRevision: 1, desired: 'run', createdAt: n, retired: false, reason: '' }) } });
    }
  }
  await writeAll(store, replicaOps);
}

/**
 * CPU seconds Postgres's backends serving this database have used so far (from /proc: the
 * server runs on this machine). On a loaded machine wall time mostly measures waiting for a
 * core; CPU per placement, ours and Postgres's, does not.
 */
async function postgresCpuSeconds(url: string | undefined): Promise<number> {
  if (!url) return 0;
  const c = new pg_.Client({ connectionString: url });
  await c.connect();
  try {
    const pids = (await c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows.map((r) => r.pid);
    let ticks = 0;
    for (const pid of pids) {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // a backend that exited meanwhile
      }
    }
    return ticks / 100;
  } finally {
    await c.end();
  }
}

/** Steps of the real scheduler until nothing is pending: committed placements per second. */
async function committed(store: Store, url?: string, mirror?: StoreMirror): Promise<{ placements: number; seconds: number; steps: number; perSecond: number; nodeCpuSeconds: number; postgresCpuSeconds: number; perCpuSecond: number }> {
  const pgCpu = await postgresCpuSeconds(url);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let steps = 0;
  let now = 1_000;
  // As a server pod runs it (server/step-options.ts).
  const scheduler = schedulerWith({ txnConcurrency: CONCURRENCY, ...(process.env.BENCH_NO_AHEAD === '1' ? {} : { turn: SERVER_STEP_OPTIONS.turn }) });
  for (;;) {
    steps++;
    // As a server pod runs the step: reading through its read mirror when it has one.
    const wake = await scheduler.reconcile({ store: mirror ? mirror.reads(store) : store, now, random: Math.random });
    if (wake.at === undefined || steps > 50) break;
    now += 1;
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  // This process's own CPU (the scheduler, the store client): on a shared machine, wall time includes waiting for a core.
  const nodeCpuSeconds = Math.round((used.user + used.system) / 1e4) / 100;
  const postgresCpu = Math.round(((await postgresCpuSeconds(url)) - pgCpu) * 100) / 100;
  const placements = (await store.range({ prefix: prefixOf('assigned'), countOnly: true })).count;
  // Placements per CPU second spent on them, this process and Postgres together.
  const perCpuSecond = Math.round(placements / (nodeCpuSeconds + postgresCpu));
  return { placements, seconds, steps, perSecond: Math.round(placements / seconds), nodeCpuSeconds, postgresCpuSeconds: postgresCpu, perCpuSecond };
}

/** The pure function alone: every replica decided against the view, in memory, placements recorded as it goes. */
async function pure(store: Store): Promise<{ decisions: number; perSecond: number; exhaustivePerSecond: number }> {
  const view = await readClusterView(store);
  const specs = new Map((await listFacts(store, 'service', prefixOf('service'))).map((s) => [s.value.name, s.value]));
  const demands = (await listFacts(store, 'replica', prefixOf('replica'))).map((r) => demandOf(r.value, specs.get(r.value.service)!));
  const run = (decide: (nodes: Candidate[]) => (d: Demand, spread: Spread) => unknown, limit: number) => {
    const nodes = candidatesOf(view);
    const byName = new Map(nodes.map((n) => [n.name, n]));
    const spreads = new Map<string, { zone: Map<string, number>; node: Map<string, number> }>();
    const placeOne = decide(nodes);
    const started = performance.now();
    let n = 0;
    for (const d of demands.slice(0, limit)) {
      const spread = spreads.get(d.service) ?? { zone: new Map(), node: new Map() };
      spreads.set(d.service, spread);
      const r = placeOne(d, spread) as { ok: boolean; node?: string };
      n++;
      if (!r.ok) continue;
      const target = byName.get(r.node!)!;
      target.used = addResources(target.used, d.resources);
      spread.zone.set(target.zone, (spread.zone.get(target.zone) ?? 0) + 1);
      spread.node.set(target.name, (spread.node.get(target.name) ?? 0) + 1);
    }
    return { n, perSecond: Math.round(n / ((performance.now() - started) / 1000)) };
  };
  const fast = run((nodes) => createPlacer(nodes), demands.length);
  const exhaustive = run((nodes) => (d, spread) => place(d, nodes, spread), 1_000);
  return { decisions: fast.n, perSecond: fast.perSecond, exhaustivePerSecond: exhaustive.perSecond };
}

async function postgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => undefined };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-bench-sched-'));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort(), persistent: false });
  return {
    url: pg.url,
    stop: async () => {
      await pg.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = { replicas: REPLICAS, nodes: NODES, loadAtStart: load() };
  process.stderr.write(`seeding MemoryStore with ${NODES} nodes and ${REPLICAS} replicas…\n`);
  const memory = await openStore('memory:');
  await seed(memory);
  const p = await pure(memory);
  results.pureDecisionsPerSecond = p.perSecond;
  results.exhaustiveDecisionsPerSecond = p.exhaustivePerSecond;
  const m = await committed(memory);
  results.memory = m;
  console.log(`pure placement function: ${p.decisions} decisions at ${p.perSecond}/s (the exhaustive reference \`place\`: ${p.exhaustivePerSecond}/s)`);
  console.log(`MemoryStore: ${m.placements} placements committed in ${m.seconds.toFixed(2)} s (${m.steps} steps, ${m.nodeCpuSeconds} s CPU): ${m.perSecond}/s`);
  await memory.close();

  const pg = await postgres();
  try {
    process.stderr.write('seeding PostgresStore…\n');
    // As a server pod opens it: every commit enqueues the controller jobs its keys wake
    // (graphile-worker's add_jobs, in the commit's one statement). BENCH_NO_HOOK=1: without.
    const hooked = process.env.BENCH_NO_HOOK !== '1';
    const jobsPool = hooked ? createPool(pg.url, 2, 'jobs') : undefined;
    if (jobsPool) await migrateJobs(jobsPool, redactUrl(pg.url));
    const store = hooked ? await PostgresStore.open(pg.url, { commitHook: jobHook(controllers()) }) : await openStore(pg.url);
    await seed(store);
    // The pod's read mirror, loaded before the clock starts (a running pod has it); its
    // following of the step's own commits is in the figures. BENCH_NO_MIRROR=1: without one.
    const mirror = process.env.BENCH_NO_MIRROR === '1' ? undefined : startStepMirror(store);
    if (mirror) while (mirror.status().state !== 'live') await new Promise((r) => setTimeout(r, 50));
    const r = await committed(store, pg.url, mirror);
    await mirror?.close();
    results.postgres = { ...r, commitHook: hooked };
    console.log(`PostgresStore${hooked ? ' (commits enqueue controller jobs, as on a server)' : ''}: ${r.placements} placements committed in ${r.seconds.toFixed(2)} s (${r.steps} steps, ${r.nodeCpuSeconds} s CPU in this process, ${r.postgresCpuSeconds} s in Postgres): ${r.perSecond}/s; ${r.perCpuSecond} per CPU second`);
    await store.close();
    await jobsPool?.end();
  } finally {
    await pg.stop();
  }
  results.loadAtEnd = load();
  console.log(JSON.stringify(results));
}

await main();
