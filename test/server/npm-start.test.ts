import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { eventually } from '../db/conformance.js';
import { freePort } from '../support/postgres-server.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** Workloads outlive the agent by design; a test must end them itself. */
async function killWorkloads(agentDir: string): Promise<void> {
  const dir = path.join(agentDir, 'replicas');
  for (const r of await readdir(dir).catch(() => [] as string[])) {
    for (const f of ['workload.pid', 'supervisor.pid']) {
      const pid = Number((await readFile(path.join(dir, r, f), 'utf8').catch(() => '')).trim().split(/\s+/)[0]);
      for (const target of [-pid, pid]) {
        try {
          if (pid > 0) process.kill(target, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
}

test('npm start: embedded Postgres, a pod and the local agent; apply through the API → the replica serves → Ctrl-C stops cleanly', async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), 'cca-start-'));
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  const port = await freePort();
  const appPort = await freePort();
  // Postgres runs as its own user: its data must be somewhere it can traverse (not a 0700 temp dir).
  const pgDir = path.join(os.tmpdir(), `cca-start-pg-${path.basename(home)}`);
  cleanups.push(() => rm(pgDir, { recursive: true, force: true }));
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/local.ts'], {
    env: { ...process.env, CCA_HOME: home, CCA_PORT: String(port), CCA_PG_PORT: String(await freePort()), CCA_PG_DIR: pgDir, DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  cleanups.push(async () => void child.kill('SIGKILL'));
  cleanups.push(() => killWorkloads(path.join(home, 'agent')));
  await eventually(async () => out, (o) => o.includes('is running') || child.exitCode !== null, 90_000);
  expect(out, out).toContain('is running');
  expect(out).toContain(`http://127.0.0.1:${port}`);
  const { admin } = JSON.parse(await readFile(path.join(home, 'tokens.json'), 'utf8')) as { admin: string };
  expect(out).toContain(admin);

  const spec = (await readFile('fixtures/hello.cca', 'utf8')).replaceAll('8080', String(appPort));
  const api = (p: string, init: RequestInit = {}) =>
    fetch(`http://127.0.0.1:${port}${p}`, { ...init, headers: { authorization: `Bearer ${admin}`, ...(init.headers ?? {}) } }).then((r) => r.json() as Promise<Record<string, any>>);
  const applied = await api('/v1/apply', { method: 'POST', body: spec, headers: { 'content-type': 'text/x-cca' } });
  expect(applied.plan?.added, JSON.stringify(applied)).toEqual(['hello']);
  const running = await eventually(() => api('/v1/services/hello'), (r) => r.service?.running === 1, 60_000);
  expect(running.service.running, out).toBe(1);
  const served = await eventually(() => fetch(`http://127.0.0.1:${appPort}/`).then((r) => r.status, () => 0), (s) => s > 0, 20_000);
  expect(served).toBeGreaterThan(0);

  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGINT');
  expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))])).toBe(0);
  expect(out).toContain('stopping');
}, 180_000);
