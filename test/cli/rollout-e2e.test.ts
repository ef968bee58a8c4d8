import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startServer } from '../../server/start.js';
import { killLeftoverWorkloads } from '../agent/support.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { waitFor } from '../support/wait.js';
import { cca } from './harness.js';
import { nodeEntry } from '../../agent/node-entry.js';

/**
 * Rolling updates end to end: a real server (memory store, controllers in-process), a real
 * agent process on the process runtime running busybox replicas, and `cca`. v1 → v2 (env
 * changed) replaces every replica; v3 (readiness never passes) gets stuck with the reason;
 * applying v2 again rolls back and keeps the v2 replicas.
 */
const root = join(import.meta.dirname, '..', '..');
const fixture = readFileSync(join(root, 'fixtures', 'rollout.cca'), 'utf8');
const version = (v: string, readinessFile = 'version') =>
  fixture
    .replace('VERSION = "v1"', `VERSION = "${v}"`)
    .replace('progress_deadline = 2m', 'progress_deadline = 8s')
    .replace('memory   = 32Mi', 'memory   = 32Mi\n  stop_grace = 2s')
    .replace('["test", "-f", "version"]', `["test", "-f", "${readinessFile}"]`);

/** Files named `version` under the agent's replica directories: what each replica wrote from its env. */
function versionsWritten(stateDir: string, ids: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 4 || !existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name), depth + 1);
      else if (e.name === 'version') out.push(readFileSync(join(dir, e.name), 'utf8').trim());
    }
  };
  for (const id of ids) walk(join(stateDir, 'replicas', id), 0);
  return out.sort();
}

describe('rolling updates end to end (process runtime)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  test('v1 → v2 replaces every replica; v3 with failing readiness is stuck with the reason; v2 again rolls back', async () => {
    const server = await startServer({ store: 'memory:', port: 0, host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 2, version: 'e2e' });
    cleanups.push(() => server.stop());
    const state = mkdtempSync(join(tmpdir(), 'cca-rollout-agent-'));
    const agent: ChildProcess = spawn(
      process.execPath,
      [...nodeEntry(import.meta.url, '../../agent/main'), '--server', server.url, '--node', 'p1', '--token', JOIN, '--runtime', 'process', '--state-dir', state, '--cpu', '4', '--memory', '4Gi'],
      { cwd: root, stdio: 'ignore' },
    );
    cleanups.push(() => {
      agent.kill('SIGKILL');
      // Workloads outlive their agent by design: end any left (and their supervisors) by pid.
      killLeftoverWorkloads(join(state, 'replicas'));
      rmSync(state, { recursive: true, force: true });
    });
    const cwd = mkdtempSync(join(tmpdir(), 'cca-rollout-'));
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
    const run = (argv: string[]) => cca(argv, { cwd, env: { CCA_SERVER: server.url, CCA_TOKEN: ADMIN, CCA_STATE_DIR: cwd } });
    const live = async () =>
      (JSON.parse((await run(['get', 'replicas', '--service', 'web', '-o', 'json'])).stdout) as { items: { name: string; state: string; desired: string }[] }).items.filter((r) => r.desired === 'run');

    writeFileSync(join(cwd, 'web.cca'), version('v1'));
    const v1 = await run(['apply', 'web.cca', '--yes', '--wait', '--timeout', '60s']);
    expect(v1.stderr).not.toContain('error');
    expect(v1.stdout).toContain('converged: web 3/3 ready');
    const v1Ids = (await live()).map((r) => r.name).sort();
    expect(v1Ids).toHaveLength(3);

    writeFileSync(join(cwd, 'web.cca'), version('v2'));
    const v2 = await run(['apply', 'web.cca', '--yes', '--wait', '--timeout', '90s']);
    expect(v2.stderr).not.toContain('error');
    expect(v2.stdout).toContain('converged: web 3/3 ready');
    const v2Replicas = await waitFor('three v2 replicas running', async () => {
      const l = await live();
      return l.length === 3 && l.every((r) => r.state === 'running') ? l : undefined;
    }, 30_000);
    const v2Ids = v2Replicas.map((r) => r.name).sort();
    expect(v2Ids.filter((id) => v1Ids.includes(id))).toEqual([]);
    expect(versionsWritten(state, v2Ids)).toEqual(['v2', 'v2', 'v2']);
    const complete = await waitFor('rollout complete shown', async () => {
      const out = (await run(['get', 'services'])).stdout;
      return out.includes('rollout complete') ? out : undefined;
    }, 20_000);
    expect(complete).toMatch(/^NAME\s+READY\s+RUNNING\s+PLACED\s+PENDING\s+ROLLOUT$/m);
    expect(complete).toMatch(/^web\s+3\/3\s+3\/3\s+3\/3\s+0\s+rollout complete \(revision \d+ → \d+\)$/m);

    writeFileSync(join(cwd, 'web.cca'), version('v3', 'never'));
    const v3 = await run(['apply', 'web.cca', '--yes', '--wait', '--timeout', '90s']);
    expect(v3.code).toBe(1);
    expect(v3.stderr).toContain('error CCA-E0719');
    expect(v3.stderr).toMatch(/rollout stuck: 3\/3 new replicas not ready/);
    const stuck = await waitFor('stuck reason with the failing readiness', async () => {
      const out = (await run(['get', 'services'])).stdout;
      return out.includes('readiness failing on p1') ? out : undefined;
    }, 30_000);
    expect(stuck).toMatch(/^web\s+3\/3\s+.*rollout stuck: 3\/3 new replicas not ready: readiness failing on p1; 2 not created yet/m);
    // Paused: the three v2 replicas keep serving, the one v3 replica stays, nothing more.
    const during = (await live()).map((r) => r.name);
    expect(v2Ids.every((id) => during.includes(id))).toBe(true);
    expect(during).toHaveLength(4);

    writeFileSync(join(cwd, 'web.cca'), version('v2'));
    const back = await run(['apply', 'web.cca', '--yes', '--wait', '--timeout', '60s']);
    expect(back.stderr).not.toContain('error');
    expect(back.stdout).toContain('converged: web 3/3 ready');
    const after = await waitFor('the v3 replica gone', async () => {
      const l = await live();
      return l.length === 3 ? l.map((r) => r.name).sort() : undefined;
    }, 30_000);
    expect(after).toEqual(v2Ids);

    expect((await run(['delete', 'service', 'web', '--yes'])).code).toBe(0);
    await waitFor('every replica stopped', async () => ((await live()).length === 0 ? true : undefined), 30_000);
  }, 240_000);
});
