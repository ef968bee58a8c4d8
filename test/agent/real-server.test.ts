import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { freePort } from '../support/postgres-server.js';
import { waitFor } from '../support/wait.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * The agent against the real server (handlers + controllers on a MemoryStore), once that is in
 * the checkout: the same agent code the fake-server tests drive, now end to end. Modules are
 * loaded by path so this file type-checks before the server lands.
 */
const root = join(import.meta.dirname, '..', '..');
describe('agent against the real server', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('apply → placed → running through the agent; a crash is replaced with a new id', async () => {
    const startMod = join(root, 'server', 'start.ts');
    const harnessMod = join(root, 'test', 'handlers', 'harness.ts');
    const { startServer } = (await import(startMod)) as { startServer: (cfg: Json) => Promise<{ url: string; stop: () => Promise<void> }> };
    const { ADMIN, JOIN } = (await import(harnessMod)) as { ADMIN: string; JOIN: string };
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:fake' } });
    const tmp = tempDir('real');
    cleanups.push(tmp.cleanup);
    const agent = new Agent({
      server: server.url, node: 'n1', token: JOIN, state: new StateDir(tmp.dir), runtime,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      pollWaitMs: 2_000, reportEveryMs: 1_000, log: () => undefined,
    });
    await agent.start();
    cleanups.push(() => agent.close());
    const api = adminApi(server.url, ADMIN);
    await waitFor('registered', () => agent.status().registered, 10_000);
    await api('POST', '/v1/apply', 'service web {\n  image    = "busybox:1.35"\n  command  = ["httpd", "-f"]\n  replicas = 2\n  cpu      = 0.25\n  memory   = 64Mi\n}\n');
    await waitFor('two running', async () => (await api('GET', '/v1/services/web')).service?.running === 2, { timeoutMs: 20_000, everyMs: 200 });
    expect(runtime.running()).toHaveLength(2);
    const victim = runtime.running()[0]!;
    runtime.crash(victim, 137);
    await waitFor('replaced with a new id', () => runtime.running().length === 2 && !runtime.running().includes(victim), { timeoutMs: 20_000, everyMs: 100 });
    await api('DELETE', '/v1/services/web');
    await waitFor('everything stopped', () => runtime.running().length === 0, { timeoutMs: 20_000, everyMs: 100 });
  }, 60_000);

  it('a real agent process on the process runtime: busybox httpd replicas serve, and an agent SIGKILL + restart duplicates nothing', async () => {
    const { spawn } = await import('node:child_process');
    const { startServer } = (await import(join(root, 'server', 'start.ts'))) as { startServer: (cfg: Json) => Promise<{ url: string; stop: () => Promise<void> }> };
    const { ADMIN, JOIN } = (await import(join(root, 'test', 'handlers', 'harness.ts'))) as { ADMIN: string; JOIN: string };
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    cleanups.push(() => server.stop());
    const tmp = tempDir('real-proc');
    const spawnAgent = () => {
      const child = spawn(process.execPath, [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'p1', '--token', JOIN, '--runtime', 'process', '--state-dir', tmp.dir, '--cpu', '4', '--memory', '4Gi'], { cwd: root, stdio: 'ignore' });
      return child;
    };
    let agent = spawnAgent();
    cleanups.push(async () => {
      agent.kill('SIGKILL');
      // Workloads outlive their agent by design: end them (and their supervisors) by pid.
      killLeftoverWorkloads(join(tmp.dir, 'replicas'));
      tmp.cleanup();
    });
    const api = adminApi(server.url, ADMIN);
    // A port the kernel says is free now: a fixed one derived from the pid met another test's listener.
    const port = await freePort();
    await api('POST', '/v1/apply', `service web {\n  image    = "busybox:1.35"\n  command  = ["sh", "-c", "mkdir -p www && echo hi > www/index.html && exec httpd -f -p 127.0.0.1:${port} -h www"]\n  replicas = 1\n  cpu      = 0.25\n  memory   = 64Mi\n}\n`);
    await waitFor('running', async () => (await api('GET', '/v1/services/web')).service?.running === 1, { timeoutMs: 30_000, everyMs: 200 });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('hi\n');
    const before = ((await api('GET', '/v1/replicas?service=web')).replicas as { id: string }[]).map((r) => r.id);
    agent.kill('SIGKILL');
    await new Promise((r) => agent.once('exit', r));
    agent = spawnAgent();
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('hi\n');
    const after = ((await api('GET', '/v1/replicas?service=web')).replicas as { id: string }[]).map((r) => r.id);
    expect(after).toEqual(before);
  }, 90_000);
});
