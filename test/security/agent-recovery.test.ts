import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { parseAgentFlags } from '../../agent/options.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { startServer } from '../../server/start.js';
import { tempDir } from '../agent/support.js';
import { waitFor } from '../support/wait.js';
import { ADMIN, JOIN } from './support.js';

/**
 * Issue 16 §1: the agent's self-recovery. A 401 makes it enroll again with the join token,
 * which now works only when its node has no credential (after `cca node reset`, or a store
 * restored); otherwise it logs the coded refusal, keeps running and retries with backoff.
 */
describe('the agent after its credential is refused', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  const agentFor = (url: string, dir: string, logs: string[]) =>
    new Agent({
      server: url,
      node: 'n1',
      token: JOIN,
      state: new StateDir(dir),
      runtime: new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:fake' } }),
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      leaseTtlSeconds: 3,
      pollWaitMs: 1_000,
      reportEveryMs: 500,
      log: (l) => logs.push(l),
    });

  it('re-enrolls by itself after a reset; a second agent for the same name is refused (coded, no crash) until an admin resets it', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 0, version: 'test' });
    cleanups.push(() => server.stop());
    const reset = async () => (await fetch(`${server.url}/v1/nodes/n1/reset`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })).status;

    const a = tempDir('recover-a');
    cleanups.push(a.cleanup);
    const logsA: string[] = [];
    const first = agentFor(server.url, a.dir, logsA);
    await first.start();
    cleanups.push(() => first.close());
    await waitFor('registered', () => first.status().registered, 10_000);
    const issued = new StateDir(a.dir).credential();
    expect(await reset()).toBe(200);
    await waitFor('enrolled again', () => logsA.filter((l) => l === 'enrolled').length === 2, 10_000);
    expect(new StateDir(a.dir).credential()).not.toBe(issued);
    expect(logsA.some((l) => l.startsWith('CCA-E0590'))).toBe(true);
    await first.close();

    // A machine with the join token but not n1's credential: refused, logged once, retried.
    const b = tempDir('recover-b');
    cleanups.push(b.cleanup);
    const logsB: string[] = [];
    const second = agentFor(server.url, b.dir, logsB);
    await second.start();
    cleanups.push(() => second.close());
    await waitFor('refused', () => logsB.some((l) => l.startsWith('CCA-E0591') && l.includes('CCA-E0630')), 10_000);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(second.status().registered).toBe(false);
    expect(logsB.filter((l) => l.includes('CCA-E0630'))).toHaveLength(1);
    expect(new StateDir(b.dir).credential()).toBeUndefined();
    expect(await reset()).toBe(200);
    await waitFor('registered after the reset', () => second.status().registered, 20_000);
  }, 60_000);
});

describe('a compromised node locked out: the join token revoked, then the node reset', () => {
  it('its agent is refused enrollment (CCA-E0591, coded and logged once), keeps retrying without crashing, and is fenced as its lease runs out', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 0, version: 'test' });
    const t = tempDir('recover-revoked');
    const logs: string[] = [];
    const agent = new Agent({
      server: server.url, node: 'n1', token: JOIN, state: new StateDir(t.dir),
      runtime: new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:fake' } }),
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      leaseTtlSeconds: 5, pollWaitMs: 1_000, reportEveryMs: 500, log: (l) => logs.push(l),
    });
    try {
      await agent.start();
      await waitFor('registered', () => agent.status().registered, 10_000);
      const admin = (path: string) => fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
      expect((await admin('/v1/tokens/join/revoke')).status).toBe(200);
      expect((await admin('/v1/nodes/n1/reset')).status).toBe(200);
      await waitFor('credential refused', () => logs.some((l) => l.startsWith('CCA-E0590')), 10_000);
      const refused = await waitFor('enrollment refused', () => logs.find((l) => l.startsWith('CCA-E0591')), 10_000);
      expect(refused).toContain('CCA-E0633');
      await waitFor('fenced as the lease runs out', () => agent.status().fenced, 10_000);
      // Retried (1 s, 2 s, …) but said once per cause.
      await new Promise((r) => setTimeout(r, 3_500));
      expect(logs.filter((l) => l.startsWith('CCA-E0591'))).toHaveLength(1);
      expect(logs.filter((l) => l.startsWith('CCA-E0590'))).toHaveLength(1);
      expect(logs.filter((l) => l === 'enrolled')).toHaveLength(1);
    } finally {
      await agent.close();
      await server.stop();
      t.cleanup();
    }
  }, 40_000);
});

describe('the join token reaches the agent through a file or the environment, not argv', () => {
  it('--token-file reads a 0600 file; a file others may read, or two sources, are refused', () => {
    const t = tempDir('token-file');
    try {
      const file = join(t.dir, 'join');
      writeFileSync(file, `${JOIN}\n`, { mode: 0o600 });
      expect(parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--token-file', file], {}).token).toBe(JOIN);
      expect(parseAgentFlags(['--server', 'http://s', '--node', 'n1'], { CCA_TOKEN_FILE: file }).token).toBe(JOIN);
      expect(parseAgentFlags(['--server', 'http://s', '--node', 'n1'], { CCA_TOKEN: JOIN }).token).toBe(JOIN);
      expect(() => parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--token-file', file, '--token', JOIN], {})).toThrow(expect.objectContaining({ code: 'CCA-E0508' }));
      chmodSync(file, 0o644);
      expect(() => parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--token-file', file], {})).toThrow(expect.objectContaining({ code: 'CCA-E0508' }));
      expect(() => parseAgentFlags(['--server', 'http://s', '--node', 'n1', '--token-file', join(t.dir, 'missing')], {})).toThrow(expect.objectContaining({ code: 'CCA-E0508' }));
    } finally {
      t.cleanup();
    }
  });

  it('npm start passes the join token to its agent in the environment and prints the admin token only when it made it', async () => {
    const { readFile } = await import('node:fs/promises');
    const source = await readFile('server/local.ts', 'utf8');
    const spawnCall = source.slice(source.indexOf('const child = spawn('), source.indexOf('child.on('));
    expect(spawnCall).toContain('CCA_TOKEN: joinToken');
    expect(spawnCall).not.toContain("'--token'");
    expect(source).toMatch(/tokens\.created \? `admin token {2}\$\{tokens\.admin\}/);
  });
});
