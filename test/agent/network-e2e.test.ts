import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NetnsManager, type ReplicaNet } from '../../agent/netns.js';
import { namespacesWith, probe } from './netns-support.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * Network policies end to end: a real server (handlers + controllers, memory store), a real
 * agent process on the process runtime with `--network netns`, busybox httpd as `db` that
 * allows only `api`, and `api` + `other` replicas probing it from their own namespaces.
 */
const root = join(import.meta.dirname, '..', '..');
const can = needs('netns') && needs('busybox');

const prefix = `te${(process.pid % 36 ** 4).toString(36)}`;
const cidr = `10.233.${process.pid % 250}.0/24`;

const spec = (allow: string) => `service db {
  image   = "busybox:1.35"
  command = ["sh", "-c", "mkdir -p www && echo db > www/index.html && exec httpd -f -p 8080 -h www"]
  port http { container = 8080 }
  cpu     = 0.1
  memory  = 32Mi
${allow}
}

service api {
  image    = "busybox:1.35"
  command  = ["sleep", "3600"]
  replicas = 2
  cpu      = 0.1
  memory   = 32Mi
}

service other {
  image   = "busybox:1.35"
  command = ["sleep", "3600"]
  cpu     = 0.1
  memory  = 32Mi
}
`;

describe.runIf(can)('network policies end to end (process runtime in network namespaces)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('db admits api, not other; an agent restart keeps it so; a policy change lets other in without restarting anything; removal cleans up', async () => {
    const { startServer } = (await import(join(root, 'server', 'start.ts'))) as { startServer: (cfg: Json) => Promise<{ url: string; stop: () => Promise<void> }> };
    const { ADMIN, JOIN } = (await import(join(root, 'test', 'handlers', 'harness.ts'))) as { ADMIN: string; JOIN: string };
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const tmp = tempDir('net-e2e');
    const net = new NetnsManager({ prefix, cidr, dir: join(tmp.dir, 'network') });
    let agent: ChildProcess | undefined;
    cleanups.push(async () => {
      agent?.kill('SIGKILL');
      // Workloads outlive their agent by design: end them (and their supervisors) by pid.
      const dir = join(tmp.dir, 'replicas');
      killLeftoverWorkloads(dir);
      await new Promise((r) => setTimeout(r, 300));
      for (const n of net.all()) await net.teardown(n.replica);
      try {
        execFileSync('ip', ['link', 'del', net.bridge], { stdio: 'ignore' });
      } catch {
        // already gone
      }
      tmp.cleanup();
    });
    let agentLog = '';
    const spawnAgent = () => {
      const child = spawn(
        process.execPath,
        [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'n1', '--token', JOIN, '--runtime', 'process', '--state-dir', tmp.dir, '--cpu', '4', '--memory', '4Gi', '--network', 'netns', '--network-cidr', cidr, '--network-prefix', prefix],
        { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      child.stderr?.on('data', (b: Buffer) => (agentLog += b.toString()));
      return child;
    };
    agent = spawnAgent();
    const api = adminApi(server.url, ADMIN);
    const applied = await api('POST', '/v1/apply', spec('  allow from service api on port http'));
    expect(applied.error, JSON.stringify(applied)).toBeUndefined();
    const running = async (svc: string, n: number) => (await api('GET', `/v1/services/${svc}`)).service?.running === n;
    await waitFor('db, api and other running', async () => (await running('db', 1)) && (await running('api', 2)) && (await running('other', 1)), { timeoutMs: 40_000, everyMs: 250 }).catch((e) => {
      throw new Error(`${(e as Error).message}\nagent log:\n${agentLog}`);
    });
    const nets = () => new Map(net.all().map((n) => [n.replica, n] as [string, ReplicaNet]));
    const of = (svc: string) => [...nets().values()].filter((n) => n.replica.startsWith(`${svc}-`));
    const [db] = of('db');
    const apis = of('api');
    const [other] = of('other');
    expect(db && other && apis.length === 2, JSON.stringify([...nets().values()])).toBe(true);
    expect(new Set([db!.address, other!.address, ...apis.map((a) => a.address)]).size).toBe(4);
    // Each replica reports its own address and ports (the observations the controller reads).
    const dbReplica = ((await api('GET', '/v1/replicas?service=db')).replicas as Json[])[0]!;
    expect(dbReplica.id).toBe(db!.replica);

    const fromNs = (n: ReplicaNet) => net.netnsPath(n.replica);
    // db serves (the node always reaches it: the agent's probes).
    await waitFor('db answers the node', () => probe(undefined, db!.address, 8080, 500), { timeoutMs: 20_000, everyMs: 200 });
    // api gets in once the controller's rules reach the agent; other never does.
    for (const a of apis) await waitFor(`api ${a.replica} reaches db`, () => probe(fromNs(a), db!.address, 8080, 500), { timeoutMs: 30_000, everyMs: 200 });
    expect(await probe(fromNs(other!), db!.address, 8080)).toBe(false);
    // Open services accept anyone: api replicas reach each other's (unused) ports only if listening; other is open.
    const pids = () => Object.fromEntries([...nets().keys()].map((r) => [r, readFileSync(join(tmp.dir, 'replicas', r, 'workload.pid'), 'utf8')]));
    const before = pids();
    const idsBefore = ((await api('GET', '/v1/replicas')).replicas as Json[]).map((r) => r.id as string).sort();

    // The agent dies and comes back: the namespaces, addresses and rules stay; nothing restarts.
    agent.kill('SIGKILL');
    await new Promise((r) => agent!.once('exit', r));
    expect(await probe(fromNs(apis[0]!), db!.address, 8080)).toBe(true);
    agent = spawnAgent();
    await waitFor('the restarted agent re-adopted its replicas', () => agentLog.split('adopted').length > 4, { timeoutMs: 30_000, everyMs: 200 });
    await new Promise((r) => setTimeout(r, 2_000));
    for (const a of apis) expect(await probe(fromNs(a), db!.address, 8080)).toBe(true);
    expect(await probe(fromNs(other!), db!.address, 8080)).toBe(false);
    expect(pids()).toEqual(before);
    expect([...nets().values()].map((n) => n.address).sort()).toEqual([db!, other!, ...apis].map((n) => n.address).sort());

    // The policy changes: other is allowed too. Nothing restarts.
    const changed = await api('POST', '/v1/apply', spec('  allow from service api on port http\n  allow from service other on port http'));
    expect(changed.error, JSON.stringify(changed)).toBeUndefined();
    await waitFor('other reaches db after the policy change', () => probe(fromNs(other!), db!.address, 8080, 500), { timeoutMs: 30_000, everyMs: 200 });
    for (const a of apis) expect(await probe(fromNs(a), db!.address, 8080)).toBe(true);
    expect(pids()).toEqual(before);
    expect(((await api('GET', '/v1/replicas')).replicas as Json[]).map((r) => r.id as string).sort()).toEqual(idsBefore);

    // And back: other is denied again, still without a restart.
    await api('POST', '/v1/apply', spec('  allow from service api on port http'));
    await waitFor('other denied again', async () => !(await probe(fromNs(other!), db!.address, 8080, 500)), { timeoutMs: 30_000, everyMs: 200 });
    expect(pids()).toEqual(before);

    // Every rule-set change is a decision about the node that `cca why` can show.
    const why = await api('GET', '/v1/why/node/n1');
    expect(JSON.stringify(why)).toContain('network rules updated');

    // Deleting the services removes every replica's namespace and veth.
    for (const s of ['db', 'api', 'other']) await api('DELETE', `/v1/services/${s}`);
    // Generous: busybox httpd ignores SIGTERM, so each replica waits out its stop grace; a loaded CI machine is slower still.
    await waitFor('namespaces cleaned up', () => namespacesWith(prefix).length === 0 && net.all().length === 0, { timeoutMs: 90_000, everyMs: 250 });
  }, 180_000);
});
