import { createServer as createHttp } from 'node:http';
import { createServer as createTcp } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseEventLine } from '../../agent/containerd/ctr.js';
import { FENCE, FenceClock } from '../../agent/core/fence.js';

const FENCE_KILL = FENCE.killMs;
import { CheckState, probeFor } from '../../agent/health.js';
import { secretMode } from '../../agent/materialize.js';
import { parseAgentFlags, parseBytes, parseCpu } from '../../agent/options.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { isCcaError } from '../../core/diagnostics/index.js';
import { healthCheckSchema, serviceSpecSchema } from '../../core/model/index.js';

describe('agent flags', () => {
  it('parses flags, repeatable labels and quantities', () => {
    const f = parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--label', 'disk=ssd', '--label=gpu=a100', '--taint', 'dedicated=db', '--cpu', '3500m', '--memory', '8Gi', '--containerd-start'], {});
    expect(f).toMatchObject({ server: 'http://s', node: 'n1', runtime: 'process', labels: { disk: 'ssd', gpu: 'a100' }, taints: ['dedicated=db'], cpuMillis: 3500, memoryBytes: 8 * 2 ** 30, containerdStart: true, namespace: 'cca-n1', leaseTtlSeconds: 30, peerListen: '127.0.0.1:0', peerAdvertise: '' });
    expect(parseCpu('2')).toBe(2000);
    expect(parseBytes('512Mi')).toBe(512 * 2 ** 20);
  });

  it('collects --insecure-registry flags (host or host:port) and refuses anything else', () => {
    const f = parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--insecure-registry', '127.0.0.1:5000', '--insecure-registry=registry.lan'], {});
    expect(f.insecureRegistries).toEqual(['127.0.0.1:5000', 'registry.lan']);
    expect(parseAgentFlags(['--server', 'http://s', '--node', 'n1'], {}).insecureRegistries).toEqual([]);
    expect(() => parseAgentFlags(['--server', 's', '--node', 'n1', '--insecure-registry', 'http://x/'], {})).toThrow(expect.objectContaining({ name: 'CcaError' }));
  });

  it('output and disk limits: defaults, sizes, and refusals', () => {
    const base = ['--server', 'http://s', '--node', 'n1', '--cpu', '1', '--memory', '1Gi'];
    expect(parseAgentFlags(base, {})).toMatchObject({ logMaxBytes: 10 * 2 ** 20, logFiles: 1, logMaxTotal: 2 ** 30, diskMinFree: 64 * 2 ** 20 });
    expect(parseAgentFlags([...base, '--log-files', '3', '--log-max-total', '256Mi', '--disk-min-free', '0'], {})).toMatchObject({ logFiles: 3, logMaxTotal: 256 * 2 ** 20, diskMinFree: 0 });
    for (const bad of [['--log-files', '0'], ['--log-files', '10'], ['--log-files', '1.5'], ['--disk-min-free', 'lots']]) {
      expect(() => parseAgentFlags([...base, ...bad], {})).toThrow(expect.objectContaining({ code: 'CCA-E0508' }));
    }
  });

  it('refuses bad settings with CCA-E0508', () => {
    for (const argv of [['--server', 's', '--node', 'n1', '--peer-listen', 'nowhere'], ['--server', 's', '--node', 'n1', '--peer-advertise', 'h:99999'], ['--server', 's', '--node', 'n1', '--peer-networks', '10.0.0.0/33'], ['--node', 'n1'], ['--server', 's', '--node', 'n1', '--runtime', 'docker'], ['--server', 's', '--node', 'n1', '--lease-ttl', '2'], ['--server', 's', '--node', 'n1', '--bogus', 'x'], ['--server', 's', '--node', 'n1', '--memory', 'lots']]) {
      expect(() => parseAgentFlags(argv, {})).toThrow(expect.objectContaining({ name: 'CcaError' }));
      try {
        parseAgentFlags(argv, {});
      } catch (e) {
        expect(isCcaError(e, 'CCA-E0508')).toBe(true);
      }
    }
  });
});

describe('fence clock', () => {
  it('is due a margin before the earliest expiry, renews only forward, and fences at once when lost', () => {
    const c = new FenceClock(10);
    expect(c.due(0)).toBe(false);
    c.renewed(1_000);
    expect(c.due(7_999)).toBe(false);
    expect(c.due(8_000)).toBe(true);
    c.renewed(500); // an older keepalive answering late never moves the deadline back
    expect(c.fenceAt()).toBe(8_000);
    c.renewed(5_000);
    expect(c.fenceAt()).toBe(12_000);
    c.lost();
    expect(c.due(0)).toBe(true);
  });
});

describe('containerd event lines', () => {
  it('parses ctr events output', () => {
    const e = parseEventLine('2026-11-29 10:06:25.849983301 +0000 UTC try /tasks/exit {"container_id":"cca-r1","id":"cca-r1","pid":9219,"exit_status":143}');
    expect(e).toEqual({ namespace: 'try', topic: '/tasks/exit', event: { container_id: 'cca-r1', id: 'cca-r1', pid: 9219, exit_status: 143 } });
    expect(parseEventLine('garbage')).toBeUndefined();
  });
});

describe('secrets', () => {
  it('are owner-only whatever mode the spec asks for', () => {
    expect(secretMode(0o644)).toBe(0o600);
    expect(secretMode(0o400)).toBe(0o400);
    expect(secretMode(0o077)).toBe(0o400);
  });
});

describe('health probes', () => {
  const spec = (port: number) => serviceSpecSchema.parse({ name: 'web', image: 'busybox:1.35', ports: [{ name: 'http', container: port }] });
  const check = (probe: unknown) => healthCheckSchema.parse({ probe, intervalMs: 10, timeoutMs: 500, failureThreshold: 2 });
  const handle = { runtime: 'fake' as const, replica: 'r', service: 'web', id: 'x', image: '', startedAt: 0 };

  it('http passes on 2xx and fails on 5xx; tcp passes on a listener; failing needs the threshold', async () => {
    let status = 200;
    const http = createHttp((_req, res) => res.writeHead(status).end()).listen(0, '127.0.0.1');
    await new Promise((r) => http.once('listening', r));
    const port = (http.address() as AddressInfo).port;
    const rt = new FakeRuntime();
    try {
      const c = check({ type: 'http', path: '/healthz', port: 'http' });
      const s = new CheckState(c, 0);
      const probe = probeFor(c, spec(port), rt, handle);
      expect(await s.run(0, probe)).toBe(true);
      expect(s.state).toBe('passing');
      status = 503;
      await s.run(10, probe);
      expect(s.state).toBe('passing');
      await s.run(20, probe);
      expect(s.state).toBe('failing');
      expect(await probeFor(check({ type: 'tcp', port }), spec(port), rt, handle)()).toBe(true);
    } finally {
      http.close();
    }
    const tcp = createTcp().listen(0, '127.0.0.1');
    await new Promise((r) => tcp.once('listening', r));
    const closedPort = (tcp.address() as AddressInfo).port;
    await new Promise((r) => tcp.close(r));
    expect(await probeFor(check({ type: 'tcp', port: closedPort }), spec(closedPort), rt, handle)()).toBe(false);
    expect(await probeFor(check({ type: 'exec', command: ['true'] }), spec(1), rt, handle)()).toBe(true);
  });
});

describe('the reconcile plan', async () => {
  const { plan } = await import('../../agent/core/plan.js');
  const { assignmentSchema } = await import('../../core/model/index.js');
  const spec = serviceSpecSchema.parse({ name: 'web', image: 'busybox:1.35', stopGraceMs: 10_000 });
  const assign = (replica: string, over: Record<string, unknown> = {}) =>
    assignmentSchema.parse({ replica, service: 'web', node: 'n1', tenure: 5, resources: spec.resources, specRevision: 1, spec, placedAt: 0, ...over });
  const slot = (replica: string, over: Record<string, unknown> = {}) => ({ replica, state: 'running' as const, hasHandle: true, held: false, fenced: false, stopGraceMs: 10_000, ...over });

  it('starts what is assigned under our tenure, never twice, never a held or terminal one', () => {
    const acts = plan([slot('a'), slot('h', { state: 'failed', hasHandle: false, held: true }), slot('x', { state: 'failed' })], [assign('a'), assign('b'), assign('h'), assign('x'), assign('old', { tenure: 4 })], 5, false);
    expect(acts).toEqual([{ kind: 'start', assignment: assign('b') }]);
  });

  it('stops the unassigned with their grace, the other-tenure and fenced ones with the kill budget', () => {
    expect(plan([slot('gone')], [], 5, false)).toEqual([{ kind: 'stop', replica: 'gone', graceMs: 10_000 }]);
    expect(plan([slot('s')], [assign('s', { desired: 'stop' })], 5, false)).toEqual([{ kind: 'stop', replica: 's', graceMs: 10_000 }]);
    expect(plan([slot('old')], [assign('old', { tenure: 4 })], 5, false)).toEqual([{ kind: 'stop', replica: 'old', graceMs: FENCE_KILL }]);
    expect(plan([slot('a')], [assign('a')], 5, true)).toEqual([{ kind: 'stop', replica: 'a', graceMs: FENCE_KILL }]);
  });

  it('keeps reporting a terminal workload while assigned, forgets it after; forgets a fenced one at once', () => {
    expect(plan([slot('a', { state: 'failed' })], [assign('a')], 5, false)).toEqual([]);
    expect(plan([slot('a', { state: 'failed' })], [], 5, false)).toEqual([{ kind: 'forget', replica: 'a' }]);
    expect(plan([slot('a', { state: 'exited', fenced: true })], [assign('a')], 5, false)).toEqual([{ kind: 'forget', replica: 'a' }]);
    expect(plan([slot('a', { state: 'stopping' })], [], 5, false)).toEqual([]);
  });
});
