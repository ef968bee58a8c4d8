import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';
import { waitFor } from '../support/wait.js';
import { localPrebuilds } from '../support/prebuilds.js';

/**
 * The package as a user gets it (issue #18): `npm pack` (its prepack runs `npm run build`),
 * `npm install --omit=dev` of the tarball into an empty folder, then `cca server` on SQLite and
 * on Postgres and `cca agent` (process runtime) from that install, which has no tsx, esbuild or
 * TypeScript sources: the agent registers and runs fixtures/hello.cca, whose page answers.
 *
 * One concession to a 2-core test machine: better-sqlite3 gets this checkout's binary as a
 * local prebuild (test/support/prebuilds.ts); everything else is npm's ordinary install from
 * its cache or the registry.
 */
const repo = path.resolve(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cca-pack-'));
const app = path.join(tmp, 'app');
const ADMIN = `cca_admin_${randomBytes(32).toString('base64url')}`;
const JOIN = `cca_join_${randomBytes(32).toString('base64url')}`;
const children: ChildProcess[] = [];

beforeAll(() => {
  execFileSync('npm', ['pack', '--pack-destination', tmp], { cwd: repo, stdio: 'pipe', timeout: 600_000 });
  const tarball = path.join(tmp, readdirSync(tmp).find((f) => f.endsWith('.tgz'))!);
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), '{ "name": "cca-pack-probe", "private": true }\n');
  execFileSync('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: app,
    stdio: 'pipe',
    timeout: 900_000,
    env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: localPrebuilds(path.join(tmp, 'prebuilds')) },
  });
}, 1_500_000);

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // Workloads outlive their agent by design: stop the replicas' process groups by their pid files.
  for (const state of readdirSync(tmp).filter((d) => d.startsWith('agent-'))) {
    const replicas = path.join(tmp, state, 'replicas');
    for (const r of existsSync(replicas) ? readdirSync(replicas) : []) {
      for (const f of ['workload.pid', 'supervisor.pid']) {
        const file = path.join(replicas, r, f);
        const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').trim().split(/\s+/)[0]) : 0;
        for (const target of pid > 0 ? [-pid, pid] : []) {
          try {
            process.kill(target, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
    }
  }
  rmSync(tmp, { recursive: true, force: true });
});

const installed = () => path.join(app, 'node_modules', 'ccattler');
const cca = () => path.join(app, 'node_modules', '.bin', 'cca');

/** `cca ARGS` from the install, as a child of the test (output to a log file). */
function start(name: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const log = openSync(path.join(tmp, `${name}.log`), 'w');
  const child = spawn(cca(), args, { cwd: app, stdio: ['ignore', log, log], env: { ...process.env, ...env } });
  children.push(child);
  return child;
}

const logOf = (name: string) => readFileSync(path.join(tmp, `${name}.log`), 'utf8');

async function startServer(name: string, store: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = start(name, ['server', '--store', store, '--port', String(port), '--workers', '2'], { CCA_ADMIN_TOKEN: ADMIN, CCA_JOIN_TOKEN: JOIN });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${name} /readyz`, () => fetch(`${url}/readyz`).then((r) => r.ok, () => child.exitCode !== null), (ok) => ok, 120_000);
  expect(child.exitCode, logOf(name)).toBeNull();
  return { url, child };
}

function cli(url: string, ...args: string[]): string {
  try {
    return execFileSync(cca(), args, { cwd: app, encoding: 'utf8', stdio: 'pipe', env: { ...process.env, CCA_SERVER: url, CCA_TOKEN: ADMIN, CCA_STATE_DIR: path.join(tmp, 'cli-state'), CCA_CONFIG: path.join(tmp, 'none.json') } });
  } catch (e) {
    return `${(e as { stdout?: string }).stdout ?? ''}${(e as { stderr?: string }).stderr ?? ''}`;
  }
}

describe('the packed package, installed with --omit=dev', () => {
  test('holds the compiled code, the console modules, migrations and docs; no sources, tests, tsx, esbuild or TypeScript', () => {
    const pkg = installed();
    for (const f of ['dist/cli/main.js', 'dist/server/run.js', 'dist/agent/supervisor.js', 'dist/agent/toolbox/httpd.js', 'dist/console/modules.json', 'web/index.html', 'db/postgres/migrations/0000_store.sql', 'fixtures/hello.cca', 'README.md', 'docs/deploy.md']) {
      expect(existsSync(path.join(pkg, f)), f).toBe(true);
    }
    for (const f of ['cli/main.ts', 'test', 'bench', 'dist/.tsbuildinfo']) expect(existsSync(path.join(pkg, f)), f).toBe(false);
    for (const dev of ['tsx', 'esbuild', 'typescript', 'vitest']) expect(existsSync(path.join(app, 'node_modules', dev)), dev).toBe(false);
  });

  test('cca version runs compiled', () => {
    expect(cli('http://127.0.0.1:1', 'version')).toContain('0.1.0');
  });

  test('cca server on SQLite is ready and serves the console without esbuild; cca agent registers and runs hello.cca', async () => {
    const { url } = await startServer('server-sqlite', `sqlite:${path.join(tmp, 'store.db')}`);
    for (const p of ['/', '/src/core/keys.js', '/vendor/zod/index.js']) expect((await fetch(`${url}${p}`)).status, p).toBe(200);
    expect((await fetch(`${url}/src/db/postgres/store.js`)).status).toBe(404);

    const agentState = path.join(tmp, 'agent-sqlite');
    start('agent-sqlite', ['agent', '--server', url, '--node', 'p1', '--runtime', 'process', '--state-dir', agentState, '--cpu', '2', '--memory', '2Gi'], { CCA_TOKEN: JOIN });
    await waitFor('node p1 registered', async () => cli(url, 'get', 'nodes'), (t) => /^p1\s+ready\b/m.test(t), 120_000);

    const appPort = await freePort();
    const spec = path.join(tmp, 'hello.cca');
    writeFileSync(spec, readFileSync(path.join(installed(), 'fixtures', 'hello.cca'), 'utf8').replaceAll('8080', String(appPort)));
    expect(cli(url, 'apply', spec, '--yes')).toContain('applied at revision');
    const page = await waitFor('the hello page', () => fetch(`http://127.0.0.1:${appPort}/`).then((r) => r.text(), () => ''), (t) => t.length > 0, 120_000);
    expect(page, `${cli(url, 'get', 'replicas', '-o', 'wide')}\n${logOf('agent-sqlite')}`).toContain('hello from ccattler');
  }, 400_000);

  test('cca server on Postgres migrates its empty database and is ready', async () => {
    const db = await createTestDatabase('pack');
    let server: ChildProcess | undefined;
    try {
      const started = await startServer('server-postgres', db.url);
      server = started.child;
      const ready = (await (await fetch(`${started.url}/readyz`)).json()) as { ok: boolean };
      expect(ready.ok).toBe(true);
      expect(cli(started.url, 'get', 'services')).not.toMatch(/CCA-E/);
    } finally {
      if (server && server.exitCode === null) {
        const exited = new Promise((r) => server!.once('exit', r));
        server.kill('SIGTERM');
        await exited;
      }
      await db.drop();
    }
  }, 300_000);
});
