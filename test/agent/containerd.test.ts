import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContainerdDaemon } from '../../agent/containerd/daemon.js';
import { FENCE } from '../../agent/core/fence.js';
import { ContainerdRuntime } from '../../agent/runtime-containerd.js';
import { startContainerdAgent, stopContainerdAgent } from './containerd-harness.js';
import type { FakeAgentServer } from './fake-server.js';
import { startAgent, tempDir, type TestAgent } from './support.js';
import { waitFor } from '../support/wait.js';
import { needs } from '../support/prerequisites.js';

const available = needs('containerd');

describe.runIf(available)('containerd runtime (private containerd)', () => {
  const tmp = tempDir('ctd');
  const namespace = `cca-test-${process.pid}`;
  let daemon: ContainerdDaemon;
  let runtime: ContainerdRuntime;
  let server: FakeAgentServer;
  let agent: TestAgent;
  const port = 20_000 + (process.pid % 20_000);

  beforeAll(async () => {
    ({ daemon, runtime, server, agent } = await startContainerdAgent(tmp.dir, namespace));
  }, 60_000);

  afterAll(async () => {
    await stopContainerdAgent({ daemon, runtime, server, agent });
    tmp.cleanup();
  }, 60_000);

  it('declares the catalogue, serves HTTP from busybox httpd, limits memory in the cgroup, and stops within the grace', async () => {
    expect(Object.keys(server.nodes.get('n1')!.record.images)).toContain('busybox:1.35');
    server.assign('n1', 'web-1', {
      name: 'web',
      image: 'busybox:1.35',
      command: ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', '/www'],
      resources: { cpuMillis: 500, memoryBytes: 64 * 1024 * 1024 },
      ports: [{ name: 'http', container: port }],
      health: { readiness: { probe: { type: 'http', path: '/' }, intervalMs: 300, timeoutMs: 200 } },
      configs: [{ name: 'motd', path: '/etc/motd', content: 'hi\n' }],
      stopGraceMs: 5_000,
    });
    const obs = await waitFor('ready', () => (server.observation('n1', 'web-1')?.health.readiness === 'passing' ? server.observation('n1', 'web-1') : undefined), 30_000);
    expect(obs.state).toBe('running');
    expect(obs.image).toMatch(/^sha256:/);
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain('hello from ccattler busybox');
    const handle = (await runtime.list()).find((s) => s.handle.replica === 'web-1')!.handle;
    const limitFile = runtime.cgroupFile(handle, 'memory', existsSync('/sys/fs/cgroup/memory') ? 'memory.limit_in_bytes' : 'memory.max');
    expect(Number(readFileSync(limitFile, 'utf8'))).toBe(64 * 1024 * 1024);
    if (existsSync('/sys/fs/cgroup/cpu')) {
      // 500 millicores: a CFS quota of half the period.
      const quota = Number(readFileSync(runtime.cgroupFile(handle, 'cpu', 'cpu.cfs_quota_us'), 'utf8'));
      const period = Number(readFileSync(runtime.cgroupFile(handle, 'cpu', 'cpu.cfs_period_us'), 'utf8'));
      expect(quota / period).toBe(0.5);
    } else {
      expect(readFileSync(runtime.cgroupFile(handle, 'cpu', 'cpu.max'), 'utf8').trim()).toMatch(/^50000 100000$/);
    }
    expect(await runtime.exec(handle, ['cat', '/etc/motd'], 5_000)).toBe(0);
    const usage = await waitFor('usage reported', () => server.observation('n1', 'web-1')?.usage, 10_000);
    expect(usage.memoryBytes).toBeGreaterThan(0);
    const stopAt = Date.now();
    server.unassign('n1', 'web-1');
    await waitFor('stopped and removed', async () => !(await runtime.ctr.containers()).has('cca-web-1'), 15_000);
    expect(Date.now() - stopAt).toBeLessThan(5_000);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  }, 60_000);

  it('kills a workload that ignores SIGTERM once its grace is over, and reports the exit from the event stream', async () => {
    server.assign('n1', 'stubborn-1', { name: 'stubborn', image: 'busybox:1.35', command: ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done'], stopGraceMs: 1_000 });
    await waitFor('running', () => server.observation('n1', 'stubborn-1')?.state === 'running', 30_000);
    const handle = (await runtime.list()).find((s) => s.handle.replica === 'stubborn-1')!.handle;
    const exited = new Promise<number>((resolve) => runtime.subscribe((e) => e.kind === 'exited' && e.replica === 'stubborn-1' && resolve(Date.now())));
    const stopAt = Date.now();
    await runtime.stop(handle, 1_000);
    const at = await exited;
    expect(at - stopAt).toBeGreaterThanOrEqual(900);
    expect(at - stopAt).toBeLessThan(4_000);
    server.unassign('n1', 'stubborn-1');
    await waitFor('removed', async () => !(await runtime.ctr.containers()).has('cca-stubborn-1'), 15_000);
  }, 60_000);

  it('re-adopts running containers after an agent restart, without starting a duplicate', async () => {
    server.assign('n1', 'keep-1', { name: 'keep', image: 'busybox:1.35', command: ['sh', '-c', 'while true; do sleep 1; done'] });
    await waitFor('running', () => server.observation('n1', 'keep-1')?.state === 'running', 30_000);
    const before = (await runtime.ctr.tasks()).get('cca-keep-1');
    await agent.agent.close();
    await runtime.close();
    runtime = new ContainerdRuntime({ address: daemon.address, namespace, root: join(tmp.dir, 'state', 'replicas'), imagesDir: join(tmp.dir, 'images') });
    agent = await startAgent(server, runtime, join(tmp.dir, 'state'), { node: 'n1', pollWaitMs: 1_000 });
    await waitFor('re-adopted', () => agent.logs.some((l) => l.includes('adopted keep-1 (running)')), 10_000);
    await waitFor('registered', () => agent.agent.status().registered, 10_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const after = (await runtime.ctr.tasks()).get('cca-keep-1');
    expect(after?.pid).toBe(before?.pid);
    expect([...(await runtime.ctr.tasks()).keys()].filter((id) => id.startsWith('cca-keep'))).toEqual(['cca-keep-1']);
    server.unassign('n1', 'keep-1');
    await waitFor('removed', async () => !(await runtime.ctr.containers()).has('cca-keep-1'), 15_000);
  }, 60_000);

  it('reports an out-of-memory kill with CCA-E0511', async () => {
    server.assign('n1', 'oom-1', { name: 'oom', image: 'busybox:1.35', command: ['sh', '-c', 'sleep 0.5; tail /dev/zero'], resources: { cpuMillis: 500, memoryBytes: 16 * 1024 * 1024 } });
    const obs = await waitFor('oom', () => (server.observation('n1', 'oom-1')?.diagnostic?.code === 'CCA-E0511' ? server.observation('n1', 'oom-1') : undefined), 30_000);
    expect(obs.state).toBe('failed');
    expect(obs.exitCode).toBe(137);
    server.unassign('n1', 'oom-1');
    await waitFor('removed', async () => !(await runtime.ctr.containers()).has('cca-oom-1'), 15_000);
  }, 60_000);

  it('runs init steps as containers before the main one; a failed step is reported with its code and output', async () => {
    server.assign('n1', 'init-ok-1', { name: 'initok', image: 'busybox:1.35', init: [{ name: 'prepare', command: ['sh', '-c', 'echo prepared'] }], command: ['sh', '-c', 'while true; do sleep 1; done'] });
    server.assign('n1', 'init-bad-1', { name: 'initbad', image: 'busybox:1.35', init: [{ name: 'migrate', command: ['sh', '-c', 'echo "no database" >&2; exit 4'] }], command: ['sh', '-c', 'sleep 100'] });
    const ok = await waitFor('init-ok running', () => (server.observation('n1', 'init-ok-1')?.state === 'running' ? server.observation('n1', 'init-ok-1') : undefined), 30_000);
    expect(ok.init).toMatchObject({ step: 'prepare', state: 'succeeded' });
    const bad = await waitFor('init-bad failed', () => (server.observation('n1', 'init-bad-1')?.state === 'failed' ? server.observation('n1', 'init-bad-1') : undefined), 30_000);
    expect(bad.exitCode).toBe(4);
    expect(bad.init).toMatchObject({ step: 'migrate', state: 'failed', exitCode: 4 });
    expect(bad.init?.tail).toContain('no database');
    expect((await runtime.ctr.containers()).has('cca-init-bad-1')).toBe(false);
    server.unassign('n1', 'init-ok-1');
    server.unassign('n1', 'init-bad-1');
    await waitFor('removed', async () => ![...(await runtime.ctr.containers())].some((c) => c.startsWith('cca-init-')), 15_000);
  }, 60_000);

  it('runs several init steps in order (each its own container, its output in init.log), then the main one; a step past its timeout is killed and says so', async () => {
    server.assign('n1', 'init-seq-1', {
      name: 'initseq', image: 'busybox:1.35',
      init: [
        { name: 'first', command: ['sh', '-c', 'sleep 0.5; echo one'] },
        { name: 'second', command: ['sh', '-c', 'echo two'] },
      ],
      command: ['sh', '-c', 'echo main; while true; do sleep 1; done'],
    });
    server.assign('n1', 'init-slow-1', { name: 'initslow', image: 'busybox:1.35', init: [{ name: 'wait', command: ['sh', '-c', 'echo waiting; sleep 60'], timeoutMs: 1_500 }], command: ['sleep', '100'] });
    const ok = await waitFor('init-seq running', () => (server.observation('n1', 'init-seq-1')?.state === 'running' ? server.observation('n1', 'init-seq-1') : undefined), 30_000);
    expect(ok.init).toMatchObject({ step: 'second', state: 'succeeded' });
    const log = readFileSync(join(tmp.dir, 'state', 'replicas', 'init-seq-1', 'init.log'), 'utf8');
    expect(log).toBe('--- init first (code 0)\none\n--- init second (code 0)\ntwo\n');
    await waitFor('main output', () => readFileSync(join(tmp.dir, 'state', 'replicas', 'init-seq-1', 'stdout.log'), 'utf8').includes('main'), 10_000);
    const slow = await waitFor('init-slow failed', () => (server.observation('n1', 'init-slow-1')?.state === 'failed' ? server.observation('n1', 'init-slow-1') : undefined), 30_000);
    expect(slow.init).toMatchObject({ step: 'wait', state: 'failed', exitCode: 137, timedOut: true });
    expect(slow.init?.tail).toContain('timed out after 1500 ms');
    expect(slow.diagnostic?.code).toBe('CCA-E0519');
    expect([...(await runtime.ctr.containers())].some((c) => c.startsWith('cca-init-slow-1-init-'))).toBe(false);
    server.unassign('n1', 'init-seq-1');
    server.unassign('n1', 'init-slow-1');
    await waitFor('removed', async () => ![...(await runtime.ctr.containers())].some((c) => c.startsWith('cca-init-')), 15_000);
  }, 90_000);

  it('reports a crash with its exit code', async () => {
    server.assign('n1', 'crash-1', { name: 'crash', image: 'busybox:1.35', command: ['sh', '-c', 'sleep 0.3; exit 3'] });
    const obs = await waitFor('failed', () => (server.observation('n1', 'crash-1')?.state === 'failed' ? server.observation('n1', 'crash-1') : undefined), 30_000);
    expect(obs.exitCode).toBe(3);
    server.unassign('n1', 'crash-1');
    await waitFor('removed', async () => !(await runtime.ctr.containers()).has('cca-crash-1'), 15_000);
  }, 60_000);

  it('bind-mounts a volume: what one replica wrote, the next replica of the service reads; read_only is a read-only mount', async () => {
    const data = { name: 'data', sizeBytes: 16 * 1024 * 1024, mountPath: '/data' };
    server.assign('n1', 'vol-1', { name: 'vol', image: 'busybox:1.35', command: ['sh', '-c', 'echo from-vol-1 > /data/note; while true; do sleep 1; done'], volumes: [data] });
    await waitFor('running', () => server.observation('n1', 'vol-1')?.state === 'running', 30_000);
    const hostDir = join(tmp.dir, 'state', 'volumes', 'vol', 'data', 'data');
    await waitFor('written through the mount', () => existsSync(join(hostDir, 'note')), 10_000);
    expect(readFileSync(join(hostDir, 'note'), 'utf8')).toBe('from-vol-1\n');
    server.unassign('n1', 'vol-1');
    await waitFor('removed', async () => !(await runtime.ctr.containers()).has('cca-vol-1'), 15_000);
    expect(existsSync(join(hostDir, 'note'))).toBe(true); // the volume outlives the container
    server.assign('n1', 'vol-2', { name: 'vol', image: 'busybox:1.35', command: ['sh', '-c', 'cat /data/note > /data/seen; while true; do sleep 1; done'], volumes: [data] });
    await waitFor('the next replica read it', () => existsSync(join(hostDir, 'seen')) && readFileSync(join(hostDir, 'seen'), 'utf8') === 'from-vol-1\n', 30_000);
    server.assign('n1', 'ro-1', { name: 'vol', image: 'busybox:1.35', command: ['sh', '-c', 'while true; do sleep 1; done'], volumes: [{ ...data, readOnly: true }] });
    await waitFor('ro running', () => server.observation('n1', 'ro-1')?.state === 'running', 30_000);
    const ro = (await runtime.list()).find((s) => s.handle.replica === 'ro-1')!.handle;
    expect(await runtime.exec(ro, ['cat', '/data/note'], 5_000)).toBe(0);
    expect(await runtime.exec(ro, ['sh', '-c', 'echo x > /data/other'], 5_000)).not.toBe(0);
    expect(existsSync(join(hostDir, 'other'))).toBe(false);
    server.unassign('n1', 'vol-2');
    server.unassign('n1', 'ro-1');
    await waitFor('removed', async () => ![...(await runtime.ctr.containers())].some((c) => c.startsWith('cca-vol-') || c.startsWith('cca-ro-')), 15_000);
  }, 90_000);

  it('a detached fencer stops the node\'s containers at the fence deadline even with no agent alive', async () => {
    server.assign('n1', 'fence-1', { name: 'fence', image: 'busybox:1.35', command: ['sh', '-c', 'trap "" TERM; while true; do sleep 1; done'], stopGraceMs: 60_000 });
    await waitFor('running', () => server.observation('n1', 'fence-1')?.state === 'running', 30_000);
    await agent.agent.close(); // the agent is gone: only the fencer can stop it now
    const fenceFile = join(tmp.dir, 'fence-at-test');
    const deadline = Date.now() + 1_500;
    writeFileSync(fenceFile, String(deadline));
    const fenced = new ContainerdRuntime({ address: daemon.address, namespace, root: join(tmp.dir, 'state', 'replicas'), imagesDir: join(tmp.dir, 'images'), fence: { file: fenceFile, killMs: FENCE.killMs, pidFile: join(tmp.dir, 'fencer.pid') } });
    try {
      await waitFor('fencer up', () => fenced.fencerPid(), 10_000);
      const stoppedAt = await waitFor('stopped by the fencer', async () => ((await runtime.ctr.tasks()).get('cca-fence-1')?.status === 'RUNNING' ? undefined : Date.now()), { timeoutMs: 15_000, everyMs: 50 });
      expect(stoppedAt).toBeGreaterThanOrEqual(deadline);
      expect(stoppedAt - deadline).toBeLessThan(FENCE.killMs + 1_500);
    } finally {
      fenced.stopFencer();
      await fenced.close();
    }
  }, 60_000);
});
