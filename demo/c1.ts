/**
 * demo-c1: three nodes, real processes. A server pod and three agents (node1..node3 in zones
 * a/b/c, process runtime, each its own state directory) on a Postgres of the demo's own,
 * driven by the `cca` CLI, every step asserted:
 *   1. six replicas of a `sleep` service spread over the zones;
 *   2. node3 dies (its agent, supervisors and workloads SIGKILLed): lease expiry → node lost →
 *      its replicas replaced on node1/node2 with new ids, no allocation ever over capacity,
 *      `cca why node node3` complete from the lease expiry;
 *   3. node3 returns: nothing moves back;
 *   4. node2 is partitioned (alive, but the demo's loopback proxy to the server is cut): it
 *      fences its own workloads before its lease can expire, replacements start elsewhere;
 *   5. the partition heals: node2 rejoins with a new tenure, nothing moves back.
 * Throughout, a sampler reads every agent's state directory every 100 ms and checks, from the
 * processes actually alive, that no replica id runs twice and the service never runs more
 * copies than desired (overlap is tolerated only inside the stated fencing window).
 * `npm run demo:c1`; CI runs it as a test (test/demo/c1.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { deadlines, FENCE } from '../agent/core/fence.js';
import { settledFrom } from '../core/model/quorum.js';
import { parsePidFile, sameProcessAlive } from '../agent/proc.js';
import { newRoleToken } from '../handlers/auth.js';
import { freePort } from '../test/support/postgres-server.js';
import { newSecretKey } from '../handlers/secret-box.js';
import { demoPostgres, type DemoPostgres } from './postgres.js';
import { splice } from './tcp-gate.js';
import { cca, DemoFailure, Proc, until } from './procs.js';
import { messageOf } from '../core/diagnostics/index.js';

type Json = Record<string, any>;

const SERVICE = 'sleepy';
const REPLICAS = 6;
const TTL_S = 10;
const NODES = [
  { name: 'node1', zone: 'a' },
  { name: 'node2', zone: 'b' },
  { name: 'node3', zone: 'c' },
] as const;
/** The sampler's period. */
const SAMPLE_MS = 100;
/**
 * When a dead node may be marked lost, counted from the kill. Not before its lease can expire:
 * the last keepalive reached the server at most one keepalive interval (ttl / keepalivesPerTtl)
 * before the kill, and the lease runs a full TTL from it. Not later than the TTL (a keepalive
 * reached the server no later than the kill) plus the slack docs/benchmarks.md states for
 * recovery (TTL + 2 s), which covers the lease reaper and the node controller's step.
 */
const LOST_SLACK_MS = 2_000;
const LOST_WINDOW_S = { from: TTL_S - TTL_S / FENCE.keepalivesPerTtl, to: TTL_S + LOST_SLACK_MS / 1000 };
/** Declared per node: room for 6 replicas of 0.1 CPU / 32Mi, so two nodes can hold all six. */
const CAPACITY = { cpu: '1', cpuMillis: 1000, memory: '1Gi', memoryBytes: 2 ** 30 };

const spec = `service ${SERVICE} {
  image    = "busybox:1.35"
  command  = ["sleep", "3600"]
  replicas = ${REPLICAS}
  cpu      = 0.1
  memory   = 32Mi
  spread   = zone
}
`;

export interface DemoOptions {
  say?: (line: string) => void;
}

/** A loopback TCP proxy to the server that the demo can cut: live connections destroyed, new ones refused. */
class CuttableProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  cut = false;
  port = 0;

  constructor(private readonly target: number) {
    this.server = net.createServer((client) => {
      if (this.cut) return void client.destroy();
      splice(client, net.connect(this.target, '127.0.0.1'), this.sockets);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  setCut(on: boolean): void {
    this.cut = on;
    if (on) for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    this.setCut(true);
    await new Promise((r) => this.server.close(r));
  }
}

/** One sample: which replica ids have a live workload process, per node, read from the state dirs. */
interface Sample {
  at: number;
  live: Map<string, string[]>; // replica id → nodes where its workload process is alive
}

/** The live processes are exactly the API's running replicas: each id alive once, on its node. */
function sameRunning(live: Map<string, string[]>, running: Json[]): boolean {
  return live.size === running.length && running.every((r) => JSON.stringify(live.get(r.id)) === JSON.stringify([r.node]));
}

function liveWorkloads(stateDirs: Record<string, string>, prefix: string): Map<string, string[]> {
  const live = new Map<string, string[]>();
  for (const [node, dir] of Object.entries(stateDirs)) {
    let ids: string[] = [];
    try {
      ids = readdirSync(path.join(dir, 'replicas'));
    } catch {
      continue;
    }
    for (const id of ids) {
      if (!id.startsWith(prefix)) continue;
      let text = '';
      try {
        text = readFileSync(path.join(dir, 'replicas', id, 'workload.pid'), 'utf8');
      } catch {
        continue;
      }
      const p = parsePidFile(text);
      if (p && sameProcessAlive(p)) live.set(id, [...(live.get(id) ?? []), node]);
    }
  }
  return live;
}

export async function runDemoC1(opts: DemoOptions = {}): Promise<void> {
  const say = opts.say ?? ((l: string) => console.log(l));
  const t0 = Date.now();
  const clock = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`;
  const step = (n: number, title: string) => say(`\n── ${n}. ${title}  (${clock()})`);
  const ok = (line: string) => say(`   ✓ ${line}`);
  const note = (line: string) => say(`   · ${line}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-demo-c1-'));
  const secretKey = newSecretKey();
  const admin = newRoleToken('admin');
  const join = newRoleToken('join');
  const port = await freePort();
  const server = `http://127.0.0.1:${port}`;
  const env = { CCA_SERVER: server, CCA_TOKEN: admin, CCA_STATE_DIR: path.join(dir, 'cli'), CCA_CONFIG: path.join(dir, 'no-config.json') };
  const stateDirs: Record<string, string> = Object.fromEntries(NODES.map((n) => [n.name, path.join(dir, n.name)]));
  const procs: Proc[] = [];
  const proxy = new CuttableProxy(port);
  let pg: DemoPostgres | undefined;
  let sampler: ReturnType<typeof setInterval> | undefined;
  let nodePoller: ReturnType<typeof setInterval> | undefined;

  const api = async (p: string): Promise<Json> => {
    const r = await fetch(`${server}${p}`, { headers: { authorization: `Bearer ${admin}` }, signal: AbortSignal.timeout(15_000) });
    return (await r.json()) as Json;
  };
  const nodes = async () => (await api('/v1/nodes')).nodes as Json[];
  const nodeOf = async (name: string) => (await nodes()).find((n) => n.name === name);
  const running = async () => ((await api(`/v1/replicas?service=${SERVICE}`)).replicas as Json[]).filter((r) => r.state === 'running');
  const check = (cond: unknown, what: string, evidence?: unknown) => {
    if (!cond) throw new DemoFailure(what, evidence);
    ok(what);
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const placement = (rs: Json[]) => NODES.map((n) => `${n.name}: ${rs.filter((r) => r.node === n.name).map((r) => r.id).sort().join(' ') || '—'}`).join('\n');
  const agentProcs = new Map<string, Proc>();
  const startAgent = (n: (typeof NODES)[number], via: string) => {
    const p = new Proc(n.name, 'agent/main.ts', ['--server', via, '--node', n.name, '--token', join, '--runtime', 'process', '--state-dir', stateDirs[n.name]!, '--zone', n.zone, '--cpu', CAPACITY.cpu, '--memory', CAPACITY.memory, '--lease-ttl', String(TTL_S)]);
    procs.push(p);
    agentProcs.set(n.name, p);
    return p;
  };

  // The sampler: ground truth from the processes, every 100 ms, for the whole demo.
  const samples: Sample[] = [];
  let overlapWindow: { from: number; to: number } | undefined;
  const violations: string[] = [];
  const takeSample = () => {
    const s: Sample = { at: Date.now(), live: liveWorkloads(stateDirs, `${SERVICE}-`) };
    samples.push(s);
    const twice = [...s.live].filter(([, ns]) => ns.length > 1);
    const extra = s.live.size - REPLICAS;
    if (twice.length > 0 || extra > 0) {
      const inWindow = overlapWindow !== undefined && s.at >= overlapWindow.from && s.at <= overlapWindow.to;
      const what = `${new Date(s.at).toISOString()}: ${s.live.size} copies alive (${[...s.live].map(([id, ns]) => `${id}@${ns.join('+')}`).join(', ')})`;
      if (!inWindow) violations.push(what);
    }
  };
  // The allocations: used ≤ declared capacity on every node at every poll.
  let nodePolls = 0;
  const overcommits: string[] = [];
  const pollNodes = async () => {
    try {
      for (const n of await nodes()) {
        if (n.used.cpuMillis > CAPACITY.cpuMillis || n.used.memoryBytes > CAPACITY.memoryBytes) overcommits.push(`${n.name}: ${JSON.stringify(n.used)}`);
      }
      nodePolls += 1;
    } catch {
      // the server is busy or restarting: the next poll checks
    }
  };

  try {
    pg = await demoPostgres(dir, 'demo_c1');
    procs.push(new Proc('server', 'server/main.ts', ['--store', pg.url, '--port', String(port), '--workers', '2'], { CCA_ADMIN_TOKEN: admin, CCA_JOIN_TOKEN: join, CCA_SECRET_KEY: secretKey }));
    await until('the server to be ready', () => fetch(`${server}/readyz`).then((r) => r.ok), Boolean);
    const proxyUrl = await proxy.listen();
    // One at a time, node1 first: the membership history is then {node1}, {node1, node2}, all
    // three. node3 (killed) and node2 (cut off) were never in a version they could be a
    // majority of alone, so their loss is judged at once; a node that registered first is
    // protected for the history window W (docs/fencing.md: its copy {itself} is its own majority).
    for (const n of NODES) {
      startAgent(n, n.name === 'node2' ? proxyUrl : server);
      await until(`${n.name} ready`, nodes, (ns) => ns.some((x) => x.name === n.name && x.state === 'ready'));
    }
    sampler = setInterval(takeSample, SAMPLE_MS);
    nodePoller = setInterval(() => void pollNodes(), 250);
    say(`ccattler demo-c1: server ${server}, Postgres: ${pg.name}, work dir ${dir}`);
    say(`   agents node1 (zone a), node2 (zone b, through the demo's proxy ${proxyUrl}), node3 (zone c); process runtime, lease TTL ${TTL_S} s`);

    step(1, `cca apply: ${REPLICAS} replicas of a sleep service, spread over the zones`);
    const file = path.join(dir, `${SERVICE}.cca`);
    await writeFile(file, spec);
    const applied = await cca(['apply', file, '--yes', '--wait'], env);
    say(applied.out.trimEnd().replace(/^/gm, '   │ '));
    check(applied.code === 0, 'apply exited 0 after the replicas converged', applied.out);
    const first = await until(`${REPLICAS} running`, running, (r) => r.length === REPLICAS);
    say(placement(first).replace(/^/gm, '   │ '));
    check(NODES.every((n) => first.filter((r) => r.node === n.name).length === 2), 'two replicas per zone', first);
    const live1 = await until('six workload processes alive', async () => liveWorkloads(stateDirs, `${SERVICE}-`), (l) => l.size === REPLICAS);
    check(sameRunning(live1, first), 'six workload processes alive, one per replica id, each on the node the API places it (from the agents’ state dirs)', { live: [...live1], api: placement(first) });

    // A member counts toward an expiry's majority only G after it registered (docs/fencing.md,
    // "settled"): until all three are, node3's loss would rightly be held, not judged in [TTL, TTL + 2 s].
    const records = ((await api('/v1/state?prefix=/nodes/')).kvs as Json[]).map((kv) => JSON.parse(kv.value as string) as Json);
    const settledAt = Math.max(...records.map((r) => settledFrom(Number(r.renewingSince ?? 0))));
    if (settledAt > Date.now()) {
      note(`waiting ${((settledAt - Date.now()) / 1000).toFixed(1)} s until every member is settled (G after it registered)`);
      await sleep(settledAt - Date.now() + 500);
    }

    step(2, 'node3 dies: its agent, supervisors and workloads SIGKILLed');
    const on3 = first.filter((r) => r.node === 'node3').map((r) => r.id as string);
    const killedAt = Date.now();
    await agentProcs.get('node3')!.kill('SIGKILL');
    const groups = killMachine(stateDirs.node3!);
    note(`killed the agent and ${groups} process groups (supervisors and workloads) of node3 at ${new Date(killedAt).toISOString()}`);
    await until('node3 lost', () => nodeOf('node3'), (n) => n?.state === 'lost', 30_000).catch(async (e: unknown) => {
      // Why it is not lost (a quorum hold says which membership version lacked what): the evidence.
      say((await cca(['why', 'node', 'node3'], env)).out.replace(/^/gm, '   │ '));
      say(JSON.stringify(await api('/v1/state?prefix=/membership/')).slice(0, 4000));
      throw e;
    });
    const lostAfter = (Date.now() - killedAt) / 1000;
    check(lostAfter >= LOST_WINDOW_S.from && lostAfter <= LOST_WINDOW_S.to, `node3 marked lost ${lostAfter.toFixed(1)} s after the kill, inside [${LOST_WINDOW_S.from}, ${LOST_WINDOW_S.to}] s (TTL − one keepalive interval, TTL + ${LOST_SLACK_MS / 1000} s)`, { lostAfter, window: LOST_WINDOW_S });
    const healed = await until('six running without node3', running, (r) => r.length === REPLICAS && r.every((x) => x.node !== 'node3'), 30_000);
    const replacedAfter = (Date.now() - killedAt) / 1000;
    say(placement(healed).replace(/^/gm, '   │ '));
    const fresh = healed.filter((r) => !first.some((f) => f.id === r.id));
    check(fresh.length === on3.length && on3.every((id) => !healed.some((r) => r.id === id)), `node3's ${on3.join(', ')} replaced by ${fresh.map((r) => r.id).join(', ')} (new ids) on node1/node2, ${replacedAfter.toFixed(1)} s after the kill`);
    const live2 = await until('six workload processes alive', async () => liveWorkloads(stateDirs, `${SERVICE}-`), (l) => l.size === REPLICAS && [...l.values()].every((ns) => !ns.includes('node3')));
    check(sameRunning(live2, healed) && healed.every((r) => r.node !== 'node3'), 'six workload processes alive, one per replica id, each where the API places it, none on node3', { live: [...live2], api: placement(healed) });
    check(nodePolls > 0 && overcommits.length === 0, `no allocation over capacity in ${nodePolls} polls of /v1/nodes`, overcommits);
    const why = await cca(['why', 'node', 'node3'], env);
    say(why.out.trimEnd().replace(/^/gm, '   │ '));
    check(why.code === 0 && /: complete/.test(why.out) && /expired/.test(why.out) && /while a majority of every membership version renews/.test(why.out), 'cca why node node3 is complete and starts from the expiry the quorum rule allowed (a majority renewing)', why.out);

    step(3, 'node3 returns: nothing moves back');
    const before3 = healed.map((r) => `${r.id}@${r.node}`).sort();
    startAgent(NODES[2], server);
    await until('node3 ready again', () => nodeOf('node3'), (n) => n?.state === 'ready' && n.registered, 30_000);
    await sleep(4_000);
    const after3 = (await running()).map((r) => `${r.id}@${r.node}`).sort();
    check(JSON.stringify(after3) === JSON.stringify(before3), 'node3 is ready again; after 4 s the same six replicas run on the same nodes', { before3, after3 });
    check(![...liveWorkloads(stateDirs, `${SERVICE}-`).values()].some((ns) => ns.includes('node3')), 'no workload process on node3');

    step(4, 'a partition: node2 stays alive but its proxy to the server is cut');
    const pre = await running();
    const on2 = pre.filter((r) => r.node === 'node2').map((r) => r.id as string);
    check(on2.length > 0, `node2 runs ${on2.join(', ')}`);
    const cutAt = Date.now();
    // Replacements may start only after the lease expires (≥ cutAt + ttl − one keepalive interval);
    // the stated window: fencing begins ttl − margin after the last keepalive and ends by the expiry.
    overlapWindow = { from: cutAt + TTL_S * 1000 - FENCE.marginMs - (TTL_S * 1000) / FENCE.keepalivesPerTtl, to: cutAt + TTL_S * 1000 };
    proxy.setCut(true);
    note(`cut at ${new Date(cutAt).toISOString()}: connections destroyed, new ones refused`);
    const fencedAt = await until('node2 to fence its workloads', async () => liveWorkloads(stateDirs, `${SERVICE}-`), (l) => on2.every((id) => !l.has(id)), 30_000).then(() => Date.now());
    check(agentProcs.get('node2')!.alive, `node2's agent is still alive; its workloads are gone ${((fencedAt - cutAt) / 1000).toFixed(1)} s after the cut`);
    await until('node2 lost', () => nodeOf('node2'), (n) => n?.state === 'lost', 30_000);
    const lost2 = Date.now();
    check(fencedAt < lost2, `fenced before the server marked node2 lost (${((lost2 - cutAt) / 1000).toFixed(1)} s after the cut)`);
    const moved = await until('six running without node2', running, (r) => r.length === REPLICAS && r.every((x) => x.node !== 'node2'), 30_000);
    await until('six workload processes alive elsewhere', async () => liveWorkloads(stateDirs, `${SERVICE}-`), (l) => l.size === REPLICAS && [...l.values()].every((ns) => !ns.includes('node2')));
    say(placement(moved).replace(/^/gm, '   │ '));
    // From the samples: when did node2's last copy die, and the first replacement start?
    const repl = moved.filter((r) => !pre.some((p) => p.id === r.id)).map((r) => r.id as string);
    const lastOld = Math.max(...samples.filter((s) => on2.some((id) => s.live.has(id))).map((s) => s.at));
    const firstNew = Math.min(...samples.filter((s) => repl.some((id) => s.live.has(id))).map((s) => s.at));
    check(repl.length === on2.length, `${on2.join(', ')} replaced by ${repl.join(', ')} on node1/node3`);
    // The fence, from the samples: every copy on node2 dead by the deadline the constants give
    // for a last successful keepalive sent no later than the cut (+ one sample period).
    const fenceBound = deadlines(cutAt, TTL_S).deadAt + SAMPLE_MS;
    check(lastOld <= fenceBound, `node2's copies were last seen alive ${((lastOld - cutAt) / 1000).toFixed(1)} s after the cut, within the fence deadline of ${((fenceBound - cutAt) / 1000).toFixed(1)} s (TTL − margin + kill budget + check period + one sample)`, { lastOld, cutAt, fenceBound });
    check(firstNew > lastOld, `the last fenced copy was last seen alive ${((lastOld - cutAt) / 1000).toFixed(1)} s after the cut, the first replacement ${((firstNew - cutAt) / 1000).toFixed(1)} s: a gap of ${((firstNew - lastOld) / 1000).toFixed(1)} s, no overlap`);

    step(5, 'the partition heals: node2 rejoins with a new tenure, nothing moves back');
    const tenure2 = (await nodeOf('node2'))?.tenure;
    const before2 = moved.map((r) => `${r.id}@${r.node}`).sort();
    proxy.setCut(false);
    await until('node2 ready again', () => nodeOf('node2'), (n) => n?.state === 'ready' && n.registered && n.tenure !== tenure2, 30_000);
    await sleep(4_000);
    const after2 = (await running()).map((r) => `${r.id}@${r.node}`).sort();
    check(JSON.stringify(after2) === JSON.stringify(before2), 'node2 is ready under a new tenure; after 4 s the same six replicas run on the same nodes', { before2, after2 });
    check(agentProcs.get('node2')!.output.includes('CCA-E0506'), 'node2’s agent logged its fence (CCA-E0506)');

    step(6, 'what the sampler saw');
    clearInterval(sampler);
    sampler = undefined;
    takeSample();
    const span = (samples.at(-1)!.at - samples[0]!.at) / 1000;
    const maxCopies = Math.max(...samples.map((s) => s.live.size));
    check(violations.length === 0, `${samples.length} samples over ${span.toFixed(0)} s (every 100 ms): no replica id ever ran twice, never more than ${REPLICAS} copies alive (max seen ${maxCopies})`, violations.slice(0, 20));
    check(overcommits.length === 0, `${nodePolls} polls of /v1/nodes: used ≤ capacity on every node every time`, overcommits);
    say(`\ndemo-c1 passed in ${((Date.now() - t0) / 1000).toFixed(0)} s.`);
  } catch (e) {
    say(`\n✗ demo-c1 failed: ${messageOf(e)}`);
    if (e instanceof DemoFailure && e.evidence !== undefined) say(`evidence: ${typeof e.evidence === 'string' ? e.evidence : JSON.stringify(e.evidence, null, 2)}`);
    for (const p of procs) say(`--- last output of ${p.name} ---\n${p.output.slice(-2000)}`);
    const b = await cca(['bundle', '-o', path.join(dir, 'failure-bundle.tar.gz')], env).catch(() => undefined);
    if (b) say(`evidence bundle: ${path.join(dir, 'failure-bundle.tar.gz')}${process.env.CCA_DEMO_KEEP ? '' : ' (set CCA_DEMO_KEEP=1 to keep it)'}`);
    throw e;
  } finally {
    if (sampler) clearInterval(sampler);
    if (nodePoller) clearInterval(nodePoller);
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    await proxy.close().catch(() => undefined);
    // Workloads outlive their agent by design: end them so the demo leaves nothing behind.
    for (const d of Object.values(stateDirs)) killMachine(d);
    await pg?.stop().catch(() => undefined);
    if (!process.env.CCA_DEMO_KEEP) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * A machine dying: SIGKILL the process group of every supervisor and workload recorded in the
 * state dir ("<pid> <start time>": only if the same process still holds the pid). Returns how
 * many groups were signalled.
 */
function killMachine(stateDir: string): number {
  let n = 0;
  let ids: string[] = [];
  try {
    ids = readdirSync(path.join(stateDir, 'replicas'));
  } catch {
    return 0;
  }
  for (const id of ids) {
    for (const f of ['supervisor.pid', 'workload.pid']) {
      let text = '';
      try {
        text = readFileSync(path.join(stateDir, 'replicas', id, f), 'utf8');
      } catch {
        continue;
      }
      const p = parsePidFile(text);
      if (!p || !sameProcessAlive(p)) continue;
      try {
        process.kill(-p.pid, 'SIGKILL');
        n += 1;
      } catch {
        try {
          process.kill(p.pid, 'SIGKILL');
          n += 1;
        } catch {
          // gone already
        }
      }
    }
  }
  return n;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runDemoC1().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
