import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { startContainerd, type ContainerdDaemon } from '../../agent/containerd/daemon.js';
import { ContainerdRuntime } from '../../agent/runtime-containerd.js';
import { StateDir } from '../../agent/state.js';
import { buildImages } from '../../fixtures/images/build.js';
import { startServer } from '../../server/start.js';
import { cca } from '../cli/harness.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { needs } from '../support/prerequisites.js';
import { stopContainerdAgent } from './containerd-harness.js';
import { adminApi, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';

const available = needs('containerd');

/**
 * `cca logs` on the containerd runtime: the whole path (server relay, agent, the shim's log
 * file), and the agent's cap on a file the shim appends to.
 */
describe.runIf(available)('cca logs (containerd runtime, real server)', () => {
  const tmp = tempDir('logs-ctr');
  const namespace = `cca-logs-${process.pid}`;
  const CAP = 8 * 1024;
  let daemon: ContainerdDaemon | undefined;
  let runtime: ContainerdRuntime | undefined;
  let agent: Agent | undefined;
  let stopServer: (() => Promise<void>) | undefined;
  let url = '';
  let api: ReturnType<typeof adminApi>;

  beforeAll(async () => {
    buildImages(join(tmp.dir, 'images'));
    daemon = await startContainerd(join(tmp.dir, 'containerd'));
    runtime = new ContainerdRuntime({ address: daemon.address, namespace, root: join(tmp.dir, 'state', 'replicas'), imagesDir: join(tmp.dir, 'images'), logMaxBytes: CAP });
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
    stopServer = () => server.stop();
    url = server.url;
    api = adminApi(url, ADMIN);
    agent = new Agent({
      server: url, node: 'c1', token: JOIN, state: new StateDir(join(tmp.dir, 'state')), runtime,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      pollWaitMs: 2_000, reportEveryMs: 1_000, log: () => undefined,
    });
    await agent.start();
    await waitFor('registered', () => agent!.status().registered, 15_000);
    await api('POST', '/v1/apply', [
      'service ticker {\n  image = "busybox:1.35"\n  command = ["sh", "-c", "echo early; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.1; done"]\n  replicas = 1\n  cpu = 0.1\n  memory = 32Mi\n}\n',
      'service chatty {\n  image = "busybox:1.35"\n  command = ["sh", "-c", "line=$(printf \'%0199d\' 0); while true; do yes $line | head -c 2000; sleep 0.5; done"]\n  replicas = 1\n  cpu = 0.1\n  memory = 32Mi\n}\n',
    ].join('\n'));
    await waitFor('both running', async () => (await api('GET', '/v1/services/ticker')).service?.running === 1 && (await api('GET', '/v1/services/chatty')).service?.running === 1, { timeoutMs: 60_000, everyMs: 250 });
  }, 180_000);

  afterAll(async () => {
    await stopContainerdAgent({ ...(daemon ? { daemon } : {}), ...(runtime ? { runtime } : {}), ...(agent ? { agent: { agent, logs: [] } } : {}) });
    await stopServer?.();
    tmp.cleanup();
  }, 60_000);

  const replicaOf = async (service: string): Promise<string> => ((await api('GET', `/v1/replicas?service=${service}`)).replicas as Json[])[0]!.id as string;

  it('-f follows a container\'s output; --tail gives the last lines', async () => {
    const id = await replicaOf('ticker');
    const ac = new AbortController();
    let first = -1;
    const r = await cca(['--server', url, '--token', ADMIN, 'logs', id, '-f'], {
      signal: ac.signal,
      onWrite: (o) => {
        const ticks = [...o.stdout.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
        if (first < 0 && ticks.length > 0) first = ticks[ticks.length - 1]!;
        if (first >= 0 && ticks.some((t) => t >= first + 10)) ac.abort();
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('early\n');
    const tail = await cca(['--server', url, '--token', ADMIN, 'logs', id, '--tail', '2']);
    expect(tail.code, tail.stderr).toBe(0);
    expect(tail.stdout).toMatch(/^tick \d+\ntick \d+\n$/);
  }, 30_000);

  it('the agent caps the shim\'s log file: one rotated copy, neither much over the cap', async () => {
    const id = await replicaOf('chatty');
    const dir = join(tmp.dir, 'state', 'replicas', id);
    await waitFor('rotated', () => readdirSync(dir).includes('stdout.log.1'), { timeoutMs: 20_000, everyMs: 200 });
    // Checked every second: a file may overshoot by a second of output (4 KB/s here).
    const size = (f: string) => statSync(join(dir, f)).size;
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      seen.push(size('stdout.log'));
      expect(size('stdout.log')).toBeLessThanOrEqual(CAP + 8 * 1024);
      expect(size('stdout.log.1')).toBeLessThanOrEqual(CAP + 8 * 1024);
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(readdirSync(dir).filter((f) => /^stdout\.log\.\d+$/.test(f))).toEqual(['stdout.log.1']);
    // The shim appends (O_APPEND): after a truncation it writes from the start again, so the
    // file is seen small, and no copy holds the zeros of a write past a truncated end.
    expect(Math.min(...seen)).toBeLessThan(CAP);
    expect(readFileSync(join(dir, 'stdout.log.1')).includes(0)).toBe(false);
  }, 40_000);
});
