import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prefixOf } from '../../core/keys.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, pidAlive, tempDir, type Json } from './support.js';
import { needs } from '../support/prerequisites.js';
import { waitFor } from '../support/wait.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * The agent on a full disk (issue #20), with real processes: a real server (SQLite), a real
 * agent process on the process runtime whose state directory is a 16 MiB tmpfs, and two
 * workloads, one quiet and one writing its output as fast as it can with caps large enough
 * (8 MiB × 3 per stream) to fill the disk. The disk fills; the quiet workload keeps running
 * (same pid, never fenced: the fence deadline is written in place), the agent lives on, the
 * node reports disk full (CCA-E0570) and a service that may only run there is not placed.
 * Deleting the chatty service frees the space: the condition clears and the service is placed.
 */
const root = join(import.meta.dirname, '..', '..');
const marker = String(8_000_000 + (process.pid % 1_000_000));
const TTL = 10;

describe.runIf(needs('tmpfs'))('a node agent on a full disk (tmpfs state directory, real processes)', () => {
  const tmp = tempDir('disk-full-e2e');
  const stateDir = join(tmp.dir, 'agent');
  let mounted = false;
  let server: RunningServer;
  let agent: ChildProcess;
  let logs = '';
  let quietPid = 0;
  let quiet = '';
  const api = () => adminApi(server.url, ADMIN);
  const fenceAt = () => Number(readFileSync(join(stateDir, 'fence-at'), 'utf8'));
  const nodeConditions = async () => ((await api()('GET', '/v1/nodes')).nodes as { name: string; conditions?: { code: string }[] }[]).find((n) => n.name === 'd1')?.conditions ?? [];
  const replicasOf = async (service: string) => (await api()('GET', `/v1/replicas?service=${service}`)).replicas as { id: string; state: string; node: string | null; reason?: string }[];
  const service = (name: string, command: string[], extra = '') =>
    `service ${name} {\n  image    = "busybox:1.35"\n  command  = ${JSON.stringify(command)}\n  replicas = 1\n  cpu      = 0.1\n  memory   = 32Mi\n  stop_grace = 1s\n${extra}}\n`;

  beforeAll(async () => {
    mkdirSync(stateDir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', stateDir]);
    mounted = true;
    server = await startServer({ store: `sqlite:${join(tmp.dir, 'store.db')}`, port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    agent = spawn(
      process.execPath,
      // Output caps above the disk's size: the caps are not what saves the node here.
      [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'd1', '--runtime', 'process', '--state-dir', stateDir, '--cpu', '4', '--memory', '4Gi', '--lease-ttl', String(TTL), '--log-max-bytes', '8Mi', '--log-files', '2', '--disk-min-free', '1Mi'],
      { cwd: root, env: { ...process.env, CCA_TOKEN: JOIN }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    agent.stderr!.on('data', (b: Buffer) => (logs += b.toString()));
    await api()('POST', '/v1/apply', service('quiet', ['sleep', marker]));
    await waitFor('quiet running', async () => (await replicasOf('quiet'))[0]?.state === 'running', { timeoutMs: 60_000, everyMs: 250 });
    quiet = (await replicasOf('quiet'))[0]!.id;
    quietPid = Number(readFileSync(join(stateDir, 'replicas', quiet, 'workload.pid'), 'utf8').split(' ')[0]);
  }, 90_000);

  afterAll(async () => {
    agent?.kill('SIGKILL');
    if (agent && agent.exitCode === null && agent.signalCode === null) await new Promise((r) => agent.once('exit', r));
    // Workloads outlive their agent by design: end them (and their supervisors) by pid, once
    // more after a moment for a supervisor the agent spawned just before it died.
    killLeftoverWorkloads(join(stateDir, 'replicas'));
    await new Promise((r) => setTimeout(r, 1_000));
    killLeftoverWorkloads(join(stateDir, 'replicas'));
    await server?.stop();
    if (mounted) {
      try {
        execFileSync('umount', [stateDir]);
      } catch {
        execFileSync('umount', ['-l', stateDir]);
      }
    }
    tmp.cleanup();
  });

  it('the disk fills: the quiet workload keeps its pid, nothing is fenced, the node reports disk full and takes nothing new', async () => {
    const chatty = 'while :; do yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c 262144; sleep 0.1; done';
    await api()('POST', '/v1/apply', service('chatty', ['sh', '-c', chatty]));
    await waitFor('the tmpfs full', () => statfsSync(stateDir).bavail * statfsSync(stateDir).bsize < 64 * 1024, { timeoutMs: 60_000, everyMs: 250 });
    await waitFor('the node reports disk full', async () => (await nodeConditions()).some((c) => c.code === 'CCA-E0570'), { timeoutMs: 30_000, everyMs: 250 });
    // The deadline keeps moving on the full disk: wait until it passed the one read now by
    // more than the lease TTL, so a deadline left behind would have fenced the workloads.
    const before = fenceAt();
    await waitFor('the fence deadline moves on a full disk', () => fenceAt() > before + TTL * 1000, { timeoutMs: 40_000, everyMs: 250 });
    expect(statfsSync(stateDir).bavail * statfsSync(stateDir).bsize).toBeLessThan(1024 * 1024);
    expect(pidAlive(quietPid)).toBe(true);
    expect(Number(readFileSync(join(stateDir, 'replicas', quiet, 'workload.pid'), 'utf8').split(' ')[0])).toBe(quietPid);
    expect(existsSync(join(stateDir, 'replicas', quiet, 'exit.json'))).toBe(false);
    expect(agent.exitCode).toBeNull();
    expect(logs).not.toMatch(/CCA-E0506/);
    expect(logs).toMatch(/CCA-E0570 node d1 cannot write to its state directory/);
    expect((await replicasOf('quiet')).map((r) => r.state)).toEqual(['running']);
    // A service that may only run on this node is not placed, and says why.
    await api()('POST', '/v1/apply', service('later', ['sleep', String(Number(marker) + 1)], '  require node == "d1"\n'));
    await waitFor('later held for the disk', async () => JSON.stringify(await api()('GET', '/v1/services/later')).includes('disk full (CCA-E0570)'), { timeoutMs: 20_000, everyMs: 250 });
    expect((await replicasOf('later'))[0]?.node ?? null).toBeNull();
    // `cca get nodes` shows it; the event is in the node's events.
    const got = await promisify(execFile)(process.execPath, ['bin/cca.mjs', 'get', 'nodes', '--server', server.url, '--token', ADMIN], { cwd: root, env: { ...process.env, CCA_STATE_DIR: tmp.dir, CCA_CONFIG: join(tmp.dir, 'none.json') } });
    expect(got.stdout).toMatch(/d1\s+ready \(disk full: CCA-E0570\)/);
    const events = (await server.store.range({ prefix: prefixOf('event', 'd1') })).kvs.map((kv) => (JSON.parse(kv.value) as Json).kind);
    expect(events).toContain('disk-full');
  }, 150_000);

  it('space freed: the condition clears, the held service is placed, the quiet workload never moved', async () => {
    await api()('DELETE', '/v1/services/chatty');
    await waitFor('the condition cleared', async () => (await nodeConditions()).length === 0, { timeoutMs: 60_000, everyMs: 250 });
    // Stopped on the full disk, its supervisor still recorded the exit (in the room it kept): an exit, not a lost workload.
    expect(logs).toMatch(/chatty-\w+ exited with code 143/);
    expect(logs).not.toMatch(/lost: CCA-E0502/);
    await waitFor('later running on d1', async () => {
      const r = (await replicasOf('later'))[0];
      return r?.state === 'running' && r.node === 'd1';
    }, { timeoutMs: 60_000, everyMs: 250 });
    expect(pidAlive(quietPid)).toBe(true);
    expect(existsSync(join(stateDir, 'replicas', quiet, 'exit.json'))).toBe(false);
    expect(agent.exitCode).toBeNull();
    expect(logs).not.toMatch(/CCA-E0506/);
  }, 150_000);
});
