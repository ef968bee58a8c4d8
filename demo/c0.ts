/**
 * demo-c0: one node, real processes. A server pod and an agent (process runtime) on a
 * Postgres of the demo's own, driven by the `cca` CLI, every step asserted:
 * apply → kill a replica → scale → unknown image → server SIGKILL → agent SIGKILL →
 * the store down for 10 s → a redacted bundle. `npm run demo:c0` (`-- --etcd` for the etcd
 * backend); CI runs both as tests.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { newRoleToken } from '../handlers/auth.js';
import { newSecretKey } from '../handlers/secret-box.js';
import { freePort } from '../test/support/postgres-server.js';
import { demoPostgres } from './postgres.js';
import { alive, cca, DemoFailure, Proc, until } from './procs.js';
import { messageOf } from '../core/diagnostics/index.js';
import { STORE_FAILING } from '../server/store-health.js';

type Json = Record<string, any>;

const SECRET = 'planted-secret-c0-5b0e1f';

const spec = (replicas: number) => `service web {
  image    = "busybox:1.35"
  command  = ["sleep", "3600"]
  replicas = ${replicas}
  cpu      = 0.1
  memory   = 32Mi

  secret api-key {
    value = "${SECRET}"
    env   = "API_KEY"
  }
}
`;

const ghost = `service ghost {
  image   = "ghost:9"
  command = ["sleep", "3600"]
  cpu     = 0.1
  memory  = 16Mi
}
`;

export interface DemoOptions {
  say?: (line: string) => void;
  /**
   * The store the server runs on: a Postgres database of its own (graphile-worker jobs; the
   * server from DATABASE_URL, else a Testcontainers container, else an embedded one), its own
   * etcd or a SQLite file (the in-process driver).
   */
  store?: 'postgres' | 'etcd' | 'sqlite';
}

/** The demo's own store, which step 7 takes down for 10 s. */
interface DemoStore {
  url: string;
  name: string;
  /** Down for `ms`, then back; `whileDown` runs in the middle of the outage. None for a file in the pod's own process. */
  outage?(ms: number, whileDown: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** Postgres in the harness order (DATABASE_URL → Testcontainers → embedded), a database of the demo's own. */
async function postgresStore(dir: string): Promise<DemoStore> {
  return await demoPostgres(dir, 'demo_c0');
}

/**
 * Why step 7 does not run on SQLite: the file is opened by the pod itself, so it cannot be
 * unreachable while the pod runs. The nearest thing, another process holding the file's write
 * lock, leaves reads (and /readyz) working and blocks the pod's event loop for the busy
 * timeout (5 s) on every write: a different failure from the outage this step checks.
 */
export const SQLITE_NO_OUTAGE = 'a SQLite file is opened by the pod itself and cannot become unreachable while the pod runs';

/**
 * The file on tmpfs when there is one, as the demo's other stores are run: its Postgres without
 * fsync (noSync), its etcd with the data dir on /dev/shm. The pod opens SQLite with
 * synchronous = FULL, an fsync per commit inside its event loop: on a busy disk those made the
 * SQLite run take twice as long as the other two, for a durability no step checks.
 */
async function sqliteStore(): Promise<DemoStore> {
  const fileDir = await mkdtemp(path.join(existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'cca-demo-c0-sqlite-'));
  const file = path.join(fileDir, 'store.db');
  return {
    url: `sqlite:${file}`,
    name: `SQLite file ${file}`,
    stop: async () => {
      if (!process.env.CCA_DEMO_KEEP) await rm(fileDir, { recursive: true, force: true });
    },
  };
}

async function etcdStore(): Promise<DemoStore> {
  const { startTestEtcd } = await import('../test/support/etcd-server.js');
  const etcd = await startTestEtcd({ fresh: true, raft: 'default' });
  return {
    url: `etcd://${etcd.hostPort}/demo-c0`,
    name: `etcd on ${etcd.hostPort}`,
    async outage(ms, whileDown) {
      const back = etcd.restart!(ms);
      await new Promise((r) => setTimeout(r, ms - 500));
      await whileDown();
      await back;
    },
    stop: () => etcd.stop(),
  };
}

export async function runDemoC0(opts: DemoOptions = {}): Promise<void> {
  const say = opts.say ?? ((l: string) => console.log(l));
  const step = (n: number, title: string) => say(`\n── ${n}. ${title}`);
  const ok = (line: string) => say(`   ✓ ${line}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-demo-c0-'));
  const admin = newRoleToken('admin');
  const join = newRoleToken('join');
  const secretKey = newSecretKey();
  const port = await freePort();
  const server = `http://127.0.0.1:${port}`;
  const env = { CCA_SERVER: server, CCA_TOKEN: admin, CCA_STATE_DIR: path.join(dir, 'cli'), CCA_CONFIG: path.join(dir, 'no-config.json') };
  const stateDir = path.join(dir, 'agent');
  const procs: Proc[] = [];
  let store: DemoStore | undefined;
  const startPod = () => {
    const p = new Proc('server', 'server/main.ts', ['--store', store!.url, '--port', String(port), '--workers', '2'], { CCA_ADMIN_TOKEN: admin, CCA_JOIN_TOKEN: join, CCA_SECRET_KEY: secretKey });
    procs.push(p);
    return p;
  };
  const startAgent = () => {
    const p = new Proc('agent', 'agent/main.ts', ['--server', server, '--node', 'local', '--token', join, '--runtime', 'process', '--state-dir', stateDir, '--zone', 'a', '--cpu', '2', '--memory', '2Gi', '--lease-ttl', '20']);
    procs.push(p);
    return p;
  };
  const api = async (p: string): Promise<Json> => {
    const r = await fetch(`${server}${p}`, { headers: { authorization: `Bearer ${admin}` }, signal: AbortSignal.timeout(15_000) });
    return (await r.json()) as Json;
  };
  const web = () => api('/v1/services/web').then((r) => r.service as Json);
  const running = async () => ((await api('/v1/replicas?service=web')).replicas as Json[]).filter((r) => r.state === 'running');
  // workload.pid holds "<pid> <start time>": the start time tells a reused pid apart.
  const pidOf = async (replica: string) => Number((await readFile(path.join(stateDir, 'replicas', replica, 'workload.pid'), 'utf8')).trim().split(/\s+/)[0]);
  const check = (cond: unknown, what: string, evidence?: unknown) => {
    if (!cond) throw new DemoFailure(what, evidence);
    ok(what);
  };

  try {
    store = opts.store === 'etcd' ? await etcdStore() : opts.store === 'sqlite' ? await sqliteStore() : await postgresStore(dir);
    let pod = startPod();
    await until('the server to be ready', () => fetch(`${server}/readyz`).then((r) => r.ok), Boolean);
    let agent = startAgent();
    await until('the node to register', () => api('/v1/nodes'), (r) => r.nodes?.some((n: Json) => n.name === 'local' && n.state === 'ready'));
    say(`ccattler demo-c0: server ${server}, ${store.name}, agent "local" (process runtime), work dir ${dir}`);

    step(1, 'cca apply --yes --wait');
    const file = path.join(dir, 'web.cca');
    await writeFile(file, spec(2));
    const applied = await cca(['apply', file, '--yes', '--wait'], env);
    say(applied.out.trimEnd().replace(/^/gm, '   │ '));
    check(applied.code === 0, 'apply exited 0 after the replicas converged', applied.out);
    const first = await until('2 running', running, (r) => r.length === 2);
    for (const r of first) check(alive(await pidOf(r.id)), `replica ${r.id} runs as pid ${await pidOf(r.id)}`);

    step(2, 'kill a replica’s process: it is replaced with a new id');
    const victim = first[0]!;
    process.kill(await pidOf(victim.id), 'SIGKILL');
    const after = await until('a replacement', running, (r) => r.length === 2 && !r.some((x) => x.id === victim.id));
    const fresh = after.find((r) => !first.some((f) => f.id === r.id))!;
    check(fresh && fresh.id !== victim.id, `replica ${victim.id} was replaced by ${fresh.id}`);
    const why = await cca(['why', 'replica', fresh.id], env);
    say(why.out.trimEnd().replace(/^/gm, '   │ '));
    check(why.code === 0 && /complete/.test(why.out), `cca why replica ${fresh.id} is complete`, why.out);

    step(3, 'scale to 3 through a changed .cca: the diff shows only the replica count');
    await writeFile(file, spec(3));
    const diff = await cca(['apply', file, '--dry-run'], env);
    say(diff.out.trimEnd().replace(/^/gm, '   │ '));
    // The whole dry run, line for line: the replica count and nothing else changes.
    const expectedDiff = ['~ service web (no replica is replaced)', '    replicas:', '      - 2', '      + 3', '0 to add, 1 to change, 0 to remove, 0 unchanged'];
    const diffLines = diff.out.trimEnd().split('\n').map((l) => l.trimEnd());
    check(diff.code === 0 && JSON.stringify(diffLines) === JSON.stringify(expectedDiff), 'the dry run is exactly: replicas - 2 + 3, one service changed, no other field', { expected: expectedDiff, got: diffLines });
    check(!diff.out.includes(SECRET), 'the planted secret is not in the diff');
    const scaled = await cca(['apply', file, '--yes', '--wait'], env);
    check(scaled.code === 0, 'apply --wait converged at 3', scaled.out);
    await until('3 running', running, (r) => r.length === 3);

    step(4, 'an unknown image is held with a coded diagnostic; the rest is unaffected');
    const ghostFile = path.join(dir, 'ghost.cca');
    await writeFile(ghostFile, ghost);
    await cca(['apply', ghostFile, '--yes'], env);
    const held = await until('the ghost to be held', () => cca(['get', 'services', '-o', 'wide'], env), (r) => /ghost/.test(r.out) && /catalogue/.test(r.out));
    say(held.out.trimEnd().replace(/^/gm, '   │ '));
    check(/ghost:9/.test(held.out), 'cca get services names the missing image', held.out);
    check((await running()).length === 3, 'web still has 3 running');

    step(5, 'server SIGKILL, then start: workloads never stop, the system reconverges');
    const before = await Promise.all((await running()).map(async (r) => ({ id: r.id as string, pid: await pidOf(r.id) })));
    await pod.kill('SIGKILL');
    check(before.every((w) => alive(w.pid)), 'with the server dead, every workload process is still alive');
    pod = startPod();
    await until('the server to be ready again', () => fetch(`${server}/readyz`).then((r) => r.ok), Boolean);
    await until('3 running', running, (r) => r.length === 3);
    check(before.every((w) => alive(w.pid)), 'the same processes run after the restart (no restart of any workload)');

    step(6, 'agent SIGKILL, then start: re-adoption, no duplicate, no restart');
    await agent.kill('SIGKILL');
    check(before.every((w) => alive(w.pid)), 'with the agent dead, every workload process is still alive');
    agent = startAgent();
    // Back only once it renewed its lease: the server's "3 running" may still be the old agent's
    // report, and step 7 is about a running agent meeting the outage, not a registering one
    // (that case is the simulation's: test/jobs/sim-fence.test.ts).
    const restarted = agent;
    await until('the agent to register again under its tenure', async () => restarted.output, (o) => /registered: .*\(kept\)/.test(o), 60_000);
    const readopted = await until('3 running', running, (r) => r.length === 3);
    check(readopted.every((r) => before.some((b) => b.id === r.id)), 'the same replica ids, re-adopted', readopted);
    check(before.every((w) => alive(w.pid)), 'the same processes, none restarted');

    const outageTitle = `the store (${opts.store ?? 'postgres'}) down for 10 s: workloads keep running; the server reports it once; nothing lost`;
    // The pod's own reports of the store, not its access log (a request that failed during the
    // outage names its code too, once per request: that is the request's line, not a report).
    // A report is a diagnostic's line (JSON, its `code` field) with one of the gate's codes:
    // whichever part of the pod meets the outage first reports it, and under load that can be
    // graphile-worker failing to release a job (CCA-E0424) before the health probe's turn.
    const failing = new RegExp(`"code":"(${[...STORE_FAILING].join('|')})"`);
    const reports = () => pod.output.split('\n').filter((l) => failing.test(l) && !/"requestId":/.test(l));
    if (!store.outage) {
      step(7, `${outageTitle} — DID NOT RUN`);
      say(`   – step 7 did not run: ${SQLITE_NO_OUTAGE}`);
    } else {
      step(7, outageTitle);
      const before7 = reports().length;
      await store.outage(10_000, async () => {
        check(before.every((w) => alive(w.pid)), 'after 10 s without the store every workload is alive');
        const ready = await fetch(`${server}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        check(ready?.status === 503, `/readyz says 503 (${ready ? ((await ready.json()) as Json).error?.code : 'no answer'})`);
      });
      await until('the server to be ready again', () => fetch(`${server}/readyz`).then((r) => r.ok), Boolean, 30_000);
      const seen = reports().slice(before7);
      say(seen.map((l) => l.trim()).join('\n').replace(/^/gm, '   │ '));
      // Each report whole in the message when there are more: a CI log shows the message, not the evidence.
      const more = seen.length === 1 ? '' : `: ${seen.map((l) => l.trim().slice(0, 400)).join(' | ')}`;
      check(seen.length === 1, `the server reported the failing store once (${seen.length} report(s)${more}), not once per step or per component`, pod.output);
    }
    const status = await until('3 running again', web, (s) => s.running === 3 && s.desired === 3);
    check(status.running === 3, 'web reconverged at 3 running, the ghost still held');
    check(before.every((w) => alive(w.pid)), 'the same processes throughout');

    step(8, 'cca bundle --last: a redacted archive');
    const bundle = path.join(dir, 'bundle.tar.gz');
    const b = await cca(['bundle', '--last', '-o', bundle], env);
    check(b.code === 0, `cca bundle wrote ${bundle}`, b.out);
    const tar = gunzipSync(await readFile(bundle)).toString('latin1');
    check(tar.length > 1000 && tar.includes('web'), 'it holds the system’s evidence');
    check(!tar.includes(SECRET), 'the planted secret is not in it');
    check(!tar.includes(admin), 'the admin token is not in it');
    say(store.outage ? '\ndemo-c0 passed.' : '\ndemo-c0 passed, except step 7 (the store outage), which did not run.');
  } catch (e) {
    say(`\n✗ demo-c0 failed: ${messageOf(e)}`);
    if (e instanceof DemoFailure && e.evidence !== undefined) say(`evidence: ${typeof e.evidence === 'string' ? e.evidence : JSON.stringify(e.evidence, null, 2)}`);
    for (const p of procs.slice(-2)) say(`--- last output of ${p.name} ---\n${p.output.slice(-3000)}`);
    const b = await cca(['bundle', '-o', path.join(dir, 'failure-bundle.tar.gz')], env).catch(() => undefined);
    if (b) say(`evidence bundle: ${path.join(dir, 'failure-bundle.tar.gz')}`);
    throw e;
  } finally {
    for (const p of procs.reverse()) await p.kill('SIGTERM');
    // Workloads outlive their agent by design: end them so the demo leaves nothing behind.
    await cleanupWorkloads(stateDir);
    await store?.stop().catch(() => undefined);
    if (!process.env.CCA_DEMO_KEEP) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function cleanupWorkloads(stateDir: string): Promise<void> {
  const { readdir } = await import('node:fs/promises');
  const dir = path.join(stateDir, 'replicas');
  for (const r of await readdir(dir).catch(() => [] as string[])) {
    for (const f of ['workload.pid', 'supervisor.pid']) {
      const pid = Number((await readFile(path.join(dir, r, f), 'utf8').catch(() => '')).trim().split(/\s+/)[0]);
      if (pid > 0) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runDemoC0({ store: process.argv.includes('--etcd') ? 'etcd' : process.argv.includes('--sqlite') ? 'sqlite' : 'postgres' }).then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
