import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKey, prefixOf } from '../../core/keys.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, sleep, tempDir } from './support.js';
import { pidAlive } from './support.js';
import { waitFor } from '../support/wait.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * Outages the agent must survive, with real processes (issue 21): the server on a SQLite
 * store, a real agent process on the process runtime running one replica, `cca` as a
 * process. (a) `cca node reset` and (b) the credential wiped from the store (a restored
 * backup) make the agent enroll again by itself and keep its workload — same pid, never a
 * second copy; (c) a corrupted desired.json on a restart while the server is down stops
 * nothing.
 */
const root = join(import.meta.dirname, '..', '..');
const marker = String(7_000_000 + (process.pid % 1_000_000));

/** Processes running this test's workload (`sleep <marker>`): never more than one. */
function copies(): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\0${marker}\0`) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('the agent through outages (real server, agent and cca processes)', () => {
  const tmp = tempDir('outage-e2e');
  const stateDir = join(tmp.dir, 'agent');
  const storeUrl = `sqlite:${join(tmp.dir, 'store.db')}`;
  let server: RunningServer;
  let agent: ChildProcess;
  let port = 0;
  let logs = '';
  let replica = '';
  let most = 0;
  let sampling: ReturnType<typeof setInterval> | undefined;

  const serve = async (p: number) => startServer({ store: storeUrl, port: p, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
  const spawnAgent = () => {
    const child = spawn(process.execPath, [...nodeEntry(import.meta.url, '../../agent/main'), '--server', `http://127.0.0.1:${port}`, '--node', 'p1', '--runtime', 'process', '--state-dir', stateDir, '--cpu', '4', '--memory', '4Gi', '--lease-ttl', '30'], {
      cwd: root,
      env: { ...process.env, CCA_TOKEN: JOIN },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (b: Buffer) => (logs += b.toString()));
    return child;
  };
  const api = () => adminApi(`http://127.0.0.1:${port}`, ADMIN);
  const workloadPid = () => Number(readFileSync(join(stateDir, 'replicas', replica, 'workload.pid'), 'utf8').split(' ')[0]);
  const alive = pidAlive;
  const count = (re: RegExp) => (logs.match(new RegExp(re, 'g')) ?? []).length;

  beforeAll(async () => {
    server = await serve(0);
    port = Number(new URL(server.url).port);
    agent = spawnAgent();
    await api()('POST', '/v1/apply', `service idle {\n  image    = "busybox:1.35"\n  command  = ["sleep", "${marker}"]\n  replicas = 1\n  cpu      = 0.1\n  memory   = 32Mi\n  stop_grace = 1s\n}\n`);
    await waitFor('running', async () => (await api()('GET', '/v1/services/idle')).service?.running === 1, { timeoutMs: 60_000, everyMs: 250 });
    replica = ((await api()('GET', '/v1/replicas?service=idle')).replicas as { id: string }[])[0]!.id;
    // Never two copies of the workload, sampled through every scenario.
    sampling = setInterval(() => (most = Math.max(most, copies().length)), 100);
  }, 90_000);

  afterAll(async () => {
    if (sampling) clearInterval(sampling);
    agent?.kill('SIGKILL');
    // Workloads outlive their agent by design: end them (and their supervisors) by pid.
    killLeftoverWorkloads(join(stateDir, 'replicas'));
    await server?.stop();
    tmp.cleanup();
  });

  /** The agent enrolled again, registered again on the same tenure, and the workload never moved. */
  const recovered = async (refusals: number, pid: number, credential: string) => {
    await waitFor('CCA-E0590 logged', () => count(/CCA-E0590 /) === refusals, 20_000);
    await waitFor('enrolled again', () => count(/"msg":"enrolled"/) === refusals + 1, 20_000);
    await waitFor('registered again', () => count(/registered: lease \d+, tenure \d+ \(kept\)/) === refusals, 20_000);
    expect(readFileSync(join(stateDir, 'credential'), 'utf8')).not.toBe(credential);
    await sleep(2_000); // a few reconciles under the new credential
    expect(workloadPid()).toBe(pid);
    expect(alive(pid)).toBe(true);
    expect(copies()).toEqual([pid]);
    expect(most).toBe(1);
    const replicas = (await api()('GET', '/v1/replicas?service=idle')).replicas as { id: string; state: string }[];
    expect(replicas.map((r) => [r.id, r.state])).toEqual([[replica, 'running']]);
    // Reported to the server too, once registered again.
    await waitFor('the refusal reported as an event', async () => {
      const events = (await server.store.range({ prefix: prefixOf('event', 'p1') })).kvs.map((kv) => JSON.parse(kv.value) as { kind: string; message: string });
      return events.filter((e) => e.kind === 'credential-refused' && e.message.startsWith('CCA-E0590')).length === refusals;
    }, 10_000);
  };

  it('(a) `cca node reset`: the agent enrolls again with its join token and keeps its workload', async () => {
    const pid = workloadPid();
    const credential = readFileSync(join(stateDir, 'credential'), 'utf8');
    const reset = await promisify(execFile)(process.execPath, ['bin/cca.mjs', 'node', 'reset', 'p1', '--server', server.url, '--token', ADMIN], { cwd: root, env: { ...process.env, CCA_STATE_DIR: tmp.dir, CCA_CONFIG: join(tmp.dir, 'none.json') } });
    expect(reset.stdout).toContain('node p1: credential deleted');
    await recovered(1, pid, credential);
    expect(logs).toMatch(/CCA-E0590 the server refused the credential of node p1 \(CCA-E0605 [^)]*; seen on \w+\)/);
  }, 60_000);

  it('(b) the credential gone from a store restored from a backup: the same recovery', async () => {
    const pid = workloadPid();
    const credential = readFileSync(join(stateDir, 'credential'), 'utf8');
    // Straight in the store, as a restore would leave it: no reset, no decision.
    const r = await server.store.txn({ compare: [], success: [{ delete: { key: buildKey('nodeCredential', 'p1') } }] });
    expect(r.succeeded).toBe(true);
    await recovered(2, pid, credential);
  }, 60_000);

  it('(b2) a restore that lost the lease too: enrolled and registered on a new tenure, the replica replaced cleanly, never two copies', async () => {
    const pid = workloadPid();
    const node = await server.store.get(buildKey('node', 'p1'));
    expect(node?.lease).toBeGreaterThan(0);
    const tenure = node!.createRevision;
    // The restored store has neither this credential nor the lease (nor the node record on it).
    await server.store.revokeLease(node!.lease);
    await server.store.txn({ compare: [], success: [{ delete: { key: buildKey('nodeCredential', 'p1') } }] });
    await waitFor('enrolled again', () => count(/"msg":"enrolled"/) === 4, 20_000);
    const fresh = await waitFor('registered on a new tenure', async () => {
      const kv = await server.store.get(buildKey('node', 'p1'));
      return kv && kv.createRevision !== tenure ? kv.createRevision : undefined;
    }, { timeoutMs: 20_000, everyMs: 200 });
    await waitFor('the agent on the new tenure', () => logs.includes(`tenure ${fresh}`), 10_000);
    // The old tenure's workload is stopped by the agent; the controllers place a replacement under the new one.
    await waitFor('the old workload stopped', () => !alive(pid), 20_000);
    const replaced = await waitFor('replaced and running', async () => {
      const rs = (await api()('GET', '/v1/replicas?service=idle')).replicas as { id: string; state: string }[];
      return rs.length === 1 && rs[0]!.id !== replica && rs[0]!.state === 'running' ? rs[0]!.id : undefined;
    }, { timeoutMs: 60_000, everyMs: 250 });
    replica = replaced;
    expect(copies()).toEqual([workloadPid()]);
    expect(most).toBe(1);
  }, 90_000);

  it('(c) restarted with a corrupted desired.json while the server is down: the workload keeps its pid', async () => {
    const pid = workloadPid();
    await server.stop();
    agent.kill('SIGKILL');
    await new Promise((r) => (agent.exitCode !== null ? r(undefined) : agent.once('exit', r)));
    const file = join(stateDir, 'desired.json');
    writeFileSync(file, readFileSync(file, 'utf8').slice(0, 40));
    logs = '';
    agent = spawnAgent();
    await waitFor('CCA-E0592 logged', () => logs.includes('CCA-E0592'), 30_000);
    expect(logs).toContain(file);
    await sleep(3_000); // several reconciles with nothing known: nothing stopped
    expect(alive(pid)).toBe(true);
    expect(copies()).toEqual([pid]);
    expect(readdirSync(stateDir).filter((f) => f.startsWith('desired.json.bad-'))).toHaveLength(1);
    server = await serve(port);
    await waitFor('the cache rewritten from the server', () => existsSync(file) && /"format":1/.test(readFileSync(file, 'utf8')), 30_000);
    await waitFor('reported running again', async () => (await api()('GET', '/v1/services/idle')).service?.running === 1, { timeoutMs: 30_000, everyMs: 250 });
    await sleep(2_000);
    expect(workloadPid()).toBe(pid);
    expect(copies()).toEqual([pid]);
    expect(most).toBe(1);
  }, 90_000);
});
