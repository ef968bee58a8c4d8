import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient, ServerError } from '../../agent/client.js';
import { deadlines, FENCE } from '../../agent/core/fence.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { FakeAgentServer } from './fake-server.js';
import { sleep, startAgent, tempDir, type TestAgent } from './support.js';
import { waitFor } from '../support/wait.js';

const web = { name: 'web', image: 'busybox:1.35', command: ['httpd', '-f'], stopGraceMs: 500 };

describe('agent with the fake runtime', () => {
  let server: FakeAgentServer;
  let state: { dir: string; cleanup: () => void };
  let runtime: FakeRuntime;
  const agents: TestAgent[] = [];

  beforeEach(async () => {
    server = new FakeAgentServer();
    await server.listen();
    state = tempDir('agent');
    runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
  });

  afterEach(async () => {
    for (const a of agents.splice(0)) await a.agent.close();
    await server.close();
    await runtime.close();
    state.cleanup();
  });

  const start = async (over = {}) => {
    const a = await startAgent(server, runtime, state.dir, over);
    agents.push(a);
    return a;
  };
  const registered = () => waitFor('registration', () => server.tenureOf('n1'));

  it('registers, runs what is assigned, reports it, and stops what is unassigned', async () => {
    await start();
    const tenure = await registered();
    expect(server.nodes.get('n1')?.record.images).toEqual({ 'busybox:1.35': 'sha256:bb' });
    server.assign('n1', 'web-1', web);
    server.assign('n1', 'web-2', web);
    await waitFor('both running', () => server.observation('n1', 'web-1')?.state === 'running' && server.observation('n1', 'web-2')?.state === 'running');
    expect(runtime.running()).toEqual(['web-1', 'web-2']);
    expect(server.observation('n1', 'web-1')).toMatchObject({ tenure, image: 'sha256:bb', service: 'web' });
    server.unassign('n1', 'web-2');
    await waitFor('web-2 stopped', () => runtime.running().join() === 'web-1');
    // Events go in the report's last call, after its observations: the server may hold the
    // observations before the events arrive.
    await waitFor('started events', () => server.events.filter((e) => e.kind === 'started').length === 2);
    expect(server.events.filter((e) => e.kind === 'started').map((e) => e.replica).sort()).toEqual(['web-1', 'web-2']);
  });

  it('holds an image that is not in the catalogue with CCA-E0501 and never retries it', async () => {
    await start();
    await registered();
    server.assign('n1', 'odd-1', { ...web, name: 'odd', image: 'nginx:1.27' });
    const obs = await waitFor('held', () => server.observation('n1', 'odd-1'));
    expect(obs.state).toBe('failed');
    expect(obs.diagnostic?.code).toBe('CCA-E0501');
    expect(obs.diagnostic?.message).toContain('busybox:1.35');
    await sleep(1_500);
    expect(runtime.starts).not.toContain('odd-1');
  });

  it('reports a crash with its exit code and leaves the replacement to the control plane', async () => {
    await start();
    await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    runtime.crash('web-1', 137);
    const obs = await waitFor('failed', () => (server.observation('n1', 'web-1')?.state === 'failed' ? server.observation('n1', 'web-1') : undefined));
    expect(obs.exitCode).toBe(137);
    await sleep(500);
    expect(runtime.starts.filter((r) => r === 'web-1')).toHaveLength(1);
    // The replica controller replaces it with a new id (restart = always).
    server.unassign('n1', 'web-1');
    server.assign('n1', 'web-1b', web);
    await waitFor('replacement running', () => server.observation('n1', 'web-1b')?.state === 'running');
    await waitFor('old one forgotten', () => !runtime.running().includes('web-1'));
  });

  it('re-adopts after a restart: same tenure, nothing started twice', async () => {
    const first = await start();
    const tenure = await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    await first.agent.close();
    agents.splice(agents.indexOf(first), 1);
    const second = await start();
    await waitFor('re-registered', () => second.agent.status().registered);
    expect(second.agent.status().tenure).toBe(tenure);
    expect(second.logs.join('\n')).toContain('adopted web-1 (running)');
    await sleep(1_000);
    expect(runtime.starts).toEqual(['web-1']);
    expect(runtime.running()).toEqual(['web-1']);
  });

  it('stops re-adopted workloads of a lost tenure when restarted after its lease expired, and registers anew', async () => {
    const first = await start({ leaseTtlSeconds: 5 });
    const tenure = await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    await first.agent.close();
    agents.splice(agents.indexOf(first), 1);
    await waitFor('lease expired', () => server.expiries[0], 10_000);
    const second = await start({ leaseTtlSeconds: 5 });
    await waitFor('stopped', () => runtime.running().length === 0, 5_000);
    const newTenure = await waitFor('new tenure', () => (server.tenureOf('n1') !== tenure ? server.tenureOf('n1') : undefined));
    expect(newTenure).toBeGreaterThan(tenure);
    expect(second.logs.join('\n')).toContain('adopted web-1 (running)');
    expect(runtime.starts).toEqual(['web-1']);
  }, 20_000);

  it('keeps workloads running while the server is unreachable (shorter than the fence) and reports after', async () => {
    await start();
    await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    server.cut(true);
    await sleep(4_000);
    expect(runtime.running()).toEqual(['web-1']);
    server.cut(false);
    server.observed.clear();
    await waitFor('reported again', () => server.observation('n1', 'web-1')?.state === 'running');
  });

  it('keeps workloads running through a store outage longer than the lease (the server says 503)', async () => {
    await start({ leaseTtlSeconds: 5 });
    await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    server.storeDown = true;
    // The fake's leases keep ticking while "the store" is down; a real store cannot expire them.
    for (const l of server.leases.values()) l.expiresAt = Number.POSITIVE_INFINITY;
    await sleep(5_500);
    expect(runtime.running()).toEqual(['web-1']);
    server.storeDown = false;
    server.observed.clear();
    await waitFor('reported again', () => server.observation('n1', 'web-1')?.state === 'running');
  });

  it('fences before the lease can expire when partitioned longer than the lease, then re-registers with a new tenure', async () => {
    const ttl = 5;
    const { logs } = await start({ leaseTtlSeconds: ttl });
    const tenure = await registered();
    server.assign('n1', 'web-1', web);
    server.assign('n1', 'web-2', { ...web, stopGraceMs: 30_000 });
    await waitFor('running', () => runtime.running().length === 2);
    server.cut(true);
    const cutAt = Date.now();
    const fencedAt = await waitFor('fenced', () => (runtime.running().length === 0 ? Date.now() : undefined), { timeoutMs: 15_000, everyMs: 20 });
    const expiry = await waitFor('lease expiry on the server', () => server.expiries[0], { timeoutMs: 15_000, everyMs: 20 });
    // Stopped before the server could expire the lease, by at least the margin minus the kill budget.
    expect(fencedAt).toBeLessThan(expiry.at);
    expect(expiry.at - fencedAt).toBeGreaterThanOrEqual(FENCE.marginMs - FENCE.killMs - FENCE.checkMs - 100);
    expect(fencedAt - cutAt).toBeLessThanOrEqual(ttl * 1000);
    expect(logs.join('\n')).toContain('CCA-E0506');
    // The control plane replaces the replicas elsewhere; the node comes back with a new tenure.
    server.unassign('n1', 'web-1');
    server.unassign('n1', 'web-2');
    server.cut(false);
    const newTenure = await waitFor('new tenure', () => (server.tenureOf('n1') !== undefined && server.tenureOf('n1') !== tenure ? server.tenureOf('n1') : undefined));
    server.assign('n1', 'web-3', web);
    await waitFor('new placement runs', () => server.observation('n1', 'web-3')?.state === 'running');
    expect(server.observation('n1', 'web-3')?.tenure).toBe(newTenure);
    expect(runtime.running()).toEqual(['web-3']);
  }, 30_000);

  it('never runs an assignment of another tenure', async () => {
    await start();
    const tenure = await registered();
    server.assign('n1', 'stale-1', web, { tenure: tenure - 1 });
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    expect(runtime.starts).toEqual(['web-1']);
  });

  it('materializes configs and secrets owner-only, caches desired state 0600, never logs a secret', async () => {
    const secret = 'hunter2-very-secret';
    const { logs } = await start();
    await registered();
    server.assign('n1', 'web-1', {
      ...web,
      configs: [{ name: 'conf', path: '/etc/web/web.conf', content: 'port=80\n' }],
      secrets: [{ name: 'pw', value: secret, path: '/run/secrets/pw', mode: 0o644 }],
    });
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    const files = join(state.dir, 'replicas', 'web-1', 'files');
    expect(readFileSync(join(files, 'etc/web/web.conf'), 'utf8')).toBe('port=80\n');
    expect(statSync(join(files, 'run/secrets/pw')).mode & 0o777).toBe(0o600);
    expect(statSync(join(state.dir, 'desired.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(state.dir, 'credential')).mode & 0o777).toBe(0o600);
    expect(logs.join('\n')).not.toContain(secret);
    expect(JSON.stringify(server.events)).not.toContain(secret);
  });

  it('keeps running its cached desired state when restarted while the server is down', async () => {
    const first = await start();
    await registered();
    server.assign('n1', 'web-1', web);
    await waitFor('running', () => server.observation('n1', 'web-1')?.state === 'running');
    await first.agent.close();
    agents.splice(agents.indexOf(first), 1);
    server.cut(true);
    runtime.crash('web-1', 0);
    await runtime.remove({ runtime: 'fake', replica: 'web-1', service: 'web', id: 'x', image: '', startedAt: 0 });
    // The runtime lost the workload (e.g. a reboot): the cached assignment brings it back without the server.
    await start();
    await waitFor('running from the cache', () => runtime.running().includes('web-1'));
  });
});

describe('agent: where replicas are reached, and liveness', () => {
  let server: FakeAgentServer;
  let state: { dir: string; cleanup: () => void };
  const agents: TestAgent[] = [];
  const served = { ...web, ports: [{ name: 'http', container: 8080 }, { name: 'admin', container: 9090 }] };

  beforeEach(async () => {
    server = new FakeAgentServer();
    await server.listen();
    state = tempDir('agent-reach');
  });

  afterEach(async () => {
    for (const a of agents.splice(0)) await a.agent.close();
    await server.close();
    state.cleanup();
  });

  it("host networking: observations carry the node's declared address and the spec's container ports", async () => {
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
    agents.push(await startAgent(server, runtime, state.dir, { record: { address: '127.0.3.3', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 2 ** 30 } } }));
    await waitFor('registration', () => server.tenureOf('n1'));
    server.assign('n1', 'web-1', served);
    const obs = await waitFor('running', () => (server.observation('n1', 'web-1')?.state === 'running' ? server.observation('n1', 'web-1') : undefined));
    expect(obs).toMatchObject({ address: '127.0.3.3', ports: { http: 8080, admin: 9090 } });
    await runtime.close();
  });

  it('re-sends usage often only for autoscaled replicas: other unchanged observations wait for usageEveryMs', async () => {
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
    agents.push(await startAgent(server, runtime, state.dir, { reportEveryMs: 300, usageEveryMs: 60_000 }));
    await waitFor('registration', () => server.tenureOf('n1'));
    server.assign('n1', 'plain-1', served);
    server.assign('n1', 'scaled-1', { ...served, name: 'scaled', autoscale: { min: 1, max: 3 } });
    await waitFor('both running', () => server.observation('n1', 'plain-1')?.state === 'running' && server.observation('n1', 'scaled-1')?.state === 'running');
    const before = { plain: server.reports.get('plain-1')!, scaled: server.reports.get('scaled-1')! };
    // The autoscaled one is re-sent every 300 ms; wait for three of those, then compare.
    await waitFor('three usage refreshes of the autoscaled replica', () => server.reports.get('scaled-1')! >= before.scaled + 3, 10_000);
    expect(server.reports.get('plain-1')).toBe(before.plain);
    await runtime.close();
  });

  it('a runtime with its own network reports its own address, whatever the node declares', async () => {
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' }, ownNetwork: true });
    agents.push(await startAgent(server, runtime, state.dir, { record: { address: '', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 2 ** 30 } } }));
    await waitFor('registration', () => server.tenureOf('n1'));
    server.assign('n1', 'web-1', served);
    const obs = await waitFor('running with an address', () => (server.observation('n1', 'web-1')?.address ? server.observation('n1', 'web-1') : undefined));
    expect(obs).toMatchObject({ state: 'running', address: '127.1.0.2', ports: { http: 8080, admin: 9090 } });
    await runtime.close();
  });

  it('liveness failing past its threshold: the agent stops the workload and reports it failed with CCA-E0513, and does not restart it', async () => {
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb' } });
    agents.push(await startAgent(server, runtime, state.dir));
    await waitFor('registration', () => server.tenureOf('n1'));
    const liveness = { probe: { type: 'exec' as const, command: ['true'] }, intervalMs: 200, timeoutMs: 100, failureThreshold: 2, initialDelayMs: 0 };
    server.assign('n1', 'web-1', { ...served, health: { liveness } });
    await waitFor('liveness passing', () => server.observation('n1', 'web-1')?.health.liveness === 'passing');
    runtime.execResults.set('web-1', 1);
    const obs = await waitFor('failed', () => (server.observation('n1', 'web-1')?.state === 'failed' ? server.observation('n1', 'web-1') : undefined));
    expect(obs.diagnostic?.code).toBe('CCA-E0513');
    expect(obs.diagnostic?.message).toBe('liveness failed: exec true did not pass 2 time(s) in a row, so the agent stopped replica web-1');
    expect(obs.exitCode).toBe(143);
    expect(runtime.running()).toEqual([]);
    await sleep(600);
    expect(runtime.starts).toEqual(['web-1']); // the replica controller replaces it, the agent never restarts it
    await waitFor('the liveness-failed event', () => server.events.some((e) => e.kind === 'liveness-failed'));
    await runtime.close();
  });
});

describe('agent API client', () => {
  it('gets 403 for another node and 401 for a bad token', async () => {
    const server = new FakeAgentServer();
    await server.listen();
    try {
      const c1 = new AgentClient(server.url, 'n1');
      await c1.enroll(server.joinToken);
      const c2 = new AgentClient(server.url, 'n2');
      c2.credential = c1.credential;
      await expect(c2.keepalive(1)).rejects.toSatisfy((e) => e instanceof ServerError && e.status === 403 && e.diagnostic.code === 'CCA-E0606');
      await expect(new AgentClient(server.url, 'n1').enroll('wrong')).rejects.toSatisfy((e) => e instanceof ServerError && e.status === 401 && e.diagnostic.code === 'CCA-E0605');
    } finally {
      await server.close();
    }
  });
});

describe('fencing constants', () => {
  it('stop every workload before the earliest expiry, with a second to spare', () => {
    const d = deadlines(100_000, 10);
    expect(d.earliestExpiry).toBe(110_000);
    expect(d.fenceAt).toBe(107_000);
    expect(d.earliestExpiry - d.deadAt).toBeGreaterThanOrEqual(800);
    expect(FENCE.marginMs).toBeGreaterThan(FENCE.killMs + FENCE.checkMs);
    // Keepalives leave room for several misses before the fence.
    const interval = (10 * 1000) / FENCE.keepalivesPerTtl;
    expect(Math.floor((10_000 - FENCE.marginMs) / interval)).toBeGreaterThanOrEqual(2);
    expect(FENCE.minTtlSeconds * 1000).toBeGreaterThan(FENCE.marginMs);
  });
});
