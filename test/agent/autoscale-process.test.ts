import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { FENCE } from '../../agent/core/fence.js';
import { ProcessRuntime } from '../../agent/runtime-process.js';
import { StateDir } from '../../agent/state.js';
import { startServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { adminApi, killLeftoverWorkloads, tempDir, type Json } from './support.js';
import { waitFor } from '../support/wait.js';


/**
 * Autoscaling end to end (fixtures/autoscale.cca): a real server (handlers + controllers on a MemoryStore), the agent
 * with the process runtime, and a service whose replicas burn CPU until a flag file appears.
 * CPU comes from /proc through the agent's usage reports; nothing is faked. The burner runs
 * in bursts (~0.1 core each under this machine's load), its request is 20m, so each replica
 * is several times over the 50% target: the autoscaler takes it from 1 to max 3; the flag
 * stops the burn and, after the spec's 8 s scale-down window, it returns to 1.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

it('a CPU-burning service scales up to max on the process runtime, and back down after the window once idle', async () => {
  const server = await startServer({
    store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test',
    controllers: { autoscaler: { syncMs: 1_000 } },
  });
  cleanups.push(() => server.stop());
  const tmp = tempDir('autoscale');
  const state = new StateDir(join(tmp.dir, 'state'));
  const runtime = new ProcessRuntime({ root: state.replicas, fenceFile: state.fenceFile, fenceKillMs: FENCE.killMs });
  const agent = new Agent({
    server: server.url, node: 'p1', token: JOIN, state, runtime,
    record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 2_000, memoryBytes: 2 * 2 ** 30 } },
    pollWaitMs: 2_000, reportEveryMs: 1_000, log: () => undefined,
  });
  await agent.start();
  cleanups.push(async () => {
    await agent.close();
    // Workloads outlive their agent by design: end any left (and their supervisors) by pid.
    killLeftoverWorkloads(state.replicas);
    tmp.cleanup();
  });
  const api = adminApi(server.url, ADMIN);
  await waitFor('registered', () => agent.status().registered, 10_000);

  // fixtures/autoscale.cca as written, with this test's own idle flag and a shorter window.
  const flag = join(tmp.dir, 'idle');
  const fixture = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'autoscale.cca'), 'utf8');
  const text = fixture.replaceAll('/tmp/cca-burn-idle', flag).replace(/scale_down_window = 1m/, 'scale_down_window = 8s');
  expect(text).toContain('scale_down_window = 8s');
  const appliedAt = Date.now();
  const applied = await api('POST', '/v1/apply', text);
  expect(applied.plan?.added).toEqual(['burn']);
  const service = async () => (await api('GET', '/v1/services/burn')).service as Json;

  await waitFor('scaled up to 3 running', async () => (await service())?.running === 3, { timeoutMs: 90_000, everyMs: 500 });
  const up = await service();
  expect(up.desired).toBe(3);
  expect(up.spec.replicas).toBe(1); // the user's replicas stay the user's
  expect(up.autoscale).toMatchObject({ min: 1, max: 3, targetCpuPercent: 50 });
  expect(up.autoscale.cpuPercent).toBeGreaterThan(55); // measured from /proc, against the 20m request
  // cca why service burn: the replica controller's scale-up, caused by the autoscaler's decision with the utilisation it saw.
  const why = await api('GET', '/v1/why/service/burn');
  // The newest decision may be another controller's (the endpoints changing as replicas get
  // ready); the scale-up's chain reaches the autoscaler's decision.
  const scaleUp = (why.history as Json[]).map((l) => l.decision).find((d) => d.controller === 'replica' && /^scaled up/.test(d.action));
  expect(scaleUp).toBeDefined();
  const scaled = (why.history as Json[]).map((l) => l.decision).find((d) => d.controller === 'autoscaler');
  expect(scaled?.action).toMatch(/^autoscaled up to [23] \(from [12]\)$/);
  expect(scaled?.reasons[0]).toMatch(/^cpu \d+% of request over \d replica\(s\) \(target 50%\)/);
  expect(why.complete).toBe(true);
  const utilisation = Number(/^cpu (\d+)%/.exec(scaled!.reasons[0])![1]);
  console.log(`autoscale e2e: 3 running ${((Date.now() - appliedAt) / 1000).toFixed(1)} s after apply; scaled up on ${utilisation}% of request; ${scaled!.reasons[2]}`);

  writeFileSync(flag, '');
  const idleAt = Date.now();
  await waitFor('back down to 1 running', async () => {
    const s = await service();
    return s?.desired === 1 && s.running === 1 && s.replicas === 1;
  }, { timeoutMs: 90_000, everyMs: 500 });
  console.log(`autoscale e2e: back to 1 running ${((Date.now() - idleAt) / 1000).toFixed(1)} s after the burn stopped (window 8 s)`);

  await api('DELETE', '/v1/services/burn');
  await waitFor('everything stopped', async () => runtime.list({ usage: false }).then((l) => l.every((w) => w.state !== 'running')), { timeoutMs: 30_000, everyMs: 200 });
}, 240_000);
