import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { QUORUM } from '../../core/model/quorum.js';
import { startServer, type RunningServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { dashboardMetrics } from '../support/dashboard.js';
import { parsePromText, total } from '../support/prom-text.js';
import { waitFor } from '../support/wait.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * A real agent process (fake runtime) with --metrics-listen, against a real server: its
 * metrics endpoint shows its workloads, fence margin and keepalive age after it runs a
 * replica, and its stderr is its JSON log.
 */
const tmp = mkdtempSync(join(tmpdir(), 'cca-agent-metrics-'));
let server: RunningServer;
let agent: ChildProcess;
let stderr = '';
let metricsUrl = '';

beforeAll(async () => {
  mkdirSync(join(tmp, 'images'));
  writeFileSync(join(tmp, 'images', 'catalogue.json'), JSON.stringify({ 'busybox:1.35': { name: 'busybox:1.35', digest: 'sha256:fake', archive: 'none.tar' } }));
  server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'test' });
  agent = spawn(process.execPath, [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'm1', '--runtime', 'fake', '--images', join(tmp, 'images'), '--state-dir', join(tmp, 'agent'), '--metrics-listen', '127.0.0.1:0'], {
    env: { ...process.env, CCA_TOKEN: JOIN, CCA_TOKEN_FILE: '', CCA_LOG_LEVEL: '', CCA_LOG_FORMAT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  agent.stderr!.on('data', (d) => (stderr += d));
  metricsUrl = await waitFor('the agent to say where its metrics are', async () => /metrics on (\S+?)"/.exec(stderr)?.[1], { timeoutMs: 30_000, everyMs: 100 });
}, 60_000);

afterAll(async () => {
  if (agent?.exitCode === null) {
    const exited = new Promise((r) => agent.once('exit', r));
    agent.kill('SIGTERM');
    await exited;
  }
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function scrape() {
  const r = await fetch(metricsUrl);
  expect(r.headers.get('content-type')).toContain('text/plain');
  return parsePromText(await r.text());
}

describe('the agent metrics endpoint (--metrics-listen)', () => {
  test('workloads by state, fence margin and keepalive age after it runs a replica; process defaults', async () => {
    const applied = await fetch(`${server.url}/v1/apply`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/x-cca' },
      body: 'service web {\n  image    = "busybox:1.35"\n  replicas = 2\n  cpu      = 0.1\n  memory   = 16Mi\n}\n',
    });
    expect(applied.status, await applied.text()).toBeLessThan(300);
    const m = await waitFor('two replicas running on m1', scrape, (x) => total(x.samples, 'cca_agent_workloads', { state: 'running' }) === 2, 30_000);
    const s = m.samples;
    const margin = total(s, 'cca_agent_fence_margin_seconds');
    const age = total(s, 'cca_agent_keepalive_age_seconds');
    // Renewed within the TTL, so the fence point is ahead and the keepalive recent.
    expect(margin).toBeGreaterThan(0);
    expect(age).toBeGreaterThanOrEqual(0);
    // Both count from the last keepalive sent: together they span at most the lease TTL.
    expect(margin + age).toBeLessThanOrEqual(QUORUM.defaultTtlSeconds);
    expect(total(s, 'cca_agent_fenced')).toBe(0);
    expect(total(s, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(total(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(metricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  }, 60_000);

  test("every agent metric deploy/grafana-dashboard.json queries is in a real scrape: no drift", async () => {
    const { types } = await scrape();
    const names = dashboardMetrics().filter((n) => n.startsWith('cca_agent_'));
    expect(names.length).toBeGreaterThanOrEqual(3);
    expect(names.filter((n) => !types.has(n))).toEqual([]);
  });

  test('its log is JSON lines on stderr with the node, and never the join token', () => {
    const lines = stderr.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.every((l) => l.node === 'm1' && typeof l.time === 'string' && typeof l.msg === 'string')).toBe(true);
    expect(lines.some((l) => String(l.msg).startsWith('registered: lease'))).toBe(true);
    expect(stderr).not.toContain(JOIN);
  });
});
