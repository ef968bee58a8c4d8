import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { waitFor } from '../support/wait.js';
import { freePort } from '../support/postgres-server.js';
import { localPrebuilds } from '../support/prebuilds.js';

/**
 * What a newcomer does first, on a machine with Node and nothing else: clone into a folder only
 * root can enter (root's home, mktemp -d), `npm install`, `npm start`, apply the README's hello
 * service and fetch its page; a command that does not exist is explained, not just counted.
 * busybox is hidden from PATH: the hello service must not need it.
 */
const repo = path.resolve(import.meta.dirname, '..', '..');
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const c of cleanups.reverse()) {
    try {
      c();
    } catch {
      // best effort
    }
  }
});

/** A PATH with every program of the usual directories except busybox. */
function pathWithoutBusybox(dir: string): string {
  const farm = path.join(dir, 'bin');
  mkdirSync(farm);
  for (const d of ['/usr/local/bin', '/usr/bin']) {
    for (const name of readdirSync(d)) {
      if (name === 'busybox') continue;
      try {
        symlinkSync(path.join(d, name), path.join(farm, name));
      } catch {
        // first directory wins, as on PATH
      }
    }
  }
  return `${farm}:/usr/local/sbin:/usr/sbin:/sbin`;
}

function killGroupOf(pidFile: string): void {
  const pid = Number(readFileSync(pidFile, 'utf8').trim().split(/\s+/)[0]);
  for (const target of [-pid, pid]) {
    try {
      if (pid > 0) process.kill(target, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

test('fresh clone in a 0700 folder: npm install, npm start without busybox, hello serves, a missing command is CCA-E0530, Ctrl-C stops', async () => {
  const top = mkdtempSync(path.join(os.tmpdir(), 'cca-clone-'));
  expect(statSync(top).mode & 0o777).toBe(0o700);
  cleanups.push(() => rmSync(top, { recursive: true, force: true }));
  const clone = path.join(top, 'ccattler');
  execFileSync('git', ['clone', '--quiet', repo, clone]);
  // better-sqlite3 gets this checkout's binary as a local prebuild (test/support/prebuilds.ts):
  // without GitHub it compiles SQLite, minutes of CPU on the suite's two cores. CI's own
  // `npm install` of a clean clone takes the ordinary path.
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: clone,
    stdio: 'pipe',
    timeout: 600_000,
    env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: localPrebuilds(path.join(top, 'prebuilds')) },
  });

  const PATH = pathWithoutBusybox(top);
  expect(() => execFileSync('sh', ['-c', 'command -v busybox'], { env: { PATH } })).toThrow();
  const port = await freePort();
  // As a newcomer runs it: no DATABASE_URL, the default home and Postgres folder.
  const { DATABASE_URL: _u, CCA_HOME: _h, CCA_PG_DIR: _d, CCA_SERVER: _s, CCA_TOKEN: _t, CCA_CONTEXT: _c, CCA_COMPILED: _cc, ...inherited } = process.env;
  // No cca config file either: a newcomer has none.
  const env = { ...inherited, PATH, CCA_PORT: String(port), CCA_PG_PORT: String(await freePort()), CCA_CONFIG: path.join(top, 'no-config.json') };
  // Its own process group, so Ctrl-C can be sent the way a terminal does.
  const start: ChildProcess = spawn('npm', ['start'], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  start.stdout!.on('data', (d) => (out += d));
  start.stderr!.on('data', (d) => (out += d));
  cleanups.push(() => {
    if (start.exitCode === null) process.kill(-start.pid!, 'SIGKILL');
  });
  cleanups.push(() => {
    const replicas = path.join(clone, '.ccattler', 'agent', 'replicas');
    for (const r of readdirSync(replicas)) for (const f of ['workload.pid', 'supervisor.pid']) killGroupOf(path.join(replicas, r, f));
  });
  // `npm start` builds first (tsc to dist/, about a minute on two busy cores), then starts.
  await waitFor('the server to say \'is running\'', async () => out, (o) => o.includes('is running') || start.exitCode !== null, 420_000);
  expect(out, out).toContain('is running');
  // The checkout is closed to the postgres user: its data went to a folder it can reach.
  const pgDir = /data in (\S+),/.exec(out)?.[1] ?? '';
  expect(pgDir, out).toMatch(/^\/var\/lib\/ccattler\//);
  cleanups.push(() => rmSync(pgDir, { recursive: true, force: true }));
  expect(out).toMatch(/admin token\s+cca_admin_\S+/);
  expect(out).toContain('npx cca apply fixtures/hello.cca');

  // As the banner says: in the checkout, cca finds the server (on a port not the default) and the token itself.
  const cca = (...args: string[]) => {
    try {
      return execFileSync('node', ['bin/cca.mjs', ...args], { cwd: clone, env, encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      return `${(e as { stdout?: string }).stdout ?? ''}${(e as { stderr?: string }).stderr ?? ''}`;
    }
  };
  const appPort = await freePort();
  writeFileSync(path.join(clone, 'hello-here.cca'), readFileSync(path.join(clone, 'fixtures/hello.cca'), 'utf8').replaceAll('8080', String(appPort)));
  expect(cca('apply', 'hello-here.cca', '--yes')).toContain('applied at revision');
  const page = await waitFor('the app page to answer', () => fetch(`http://127.0.0.1:${appPort}/`).then((r) => r.text(), () => ''), (t) => t.length > 0, 60_000);
  expect(page, `${out}\n${cca('get', 'replicas', '-o', 'wide')}`).toContain('hello from ccattler');

  writeFileSync(path.join(clone, 'broken.cca'), 'service broken {\n  image = "ccattler/toolbox:1"\n  command = ["no-such-program-cca", "--serve"]\n  cpu = 0.1\n  memory = 16Mi\n}\n');
  expect(cca('apply', 'broken.cca', '--yes')).toContain('applied at revision');
  const wide = await waitFor('the broken service to show CCA-E0530', async () => cca('get', 'services', '-o', 'wide'), (t) => t.includes('CCA-E0530'), 60_000);
  const line = wide.split('\n').find((l) => l.startsWith('broken')) ?? '';
  expect(line, wide).toContain('CCA-E0530');
  expect(line).toContain('cannot start `no-such-program-cca`');
  expect(line).toContain('node local');
  expect(line).toContain('process runtime');
  expect(line).toContain('fix: on node local');

  // Ctrl-C: npm itself dies of the SIGINT; what it ran must stop cleanly, Postgres last.
  const exited = new Promise<string>((r) => start.once('exit', (code, signal) => r(signal ?? String(code))));
  process.kill(-start.pid!, 'SIGINT');
  expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))]), out).toMatch(/^(0|SIGINT)$/);
  await waitFor('the server to say \'stopping\'', async () => out, (o) => o.includes('stopping'), 10_000);
  // A clean shutdown removes postmaster.pid; a killed postmaster leaves it.
  await waitFor('postmaster.pid removed (a clean Postgres shutdown)', async () => existsSync(path.join(pgDir, 'data', 'postmaster.pid')), (present) => !present, 30_000);
  expect(existsSync(path.join(pgDir, 'data', 'postmaster.pid')), out).toBe(false);
  // Stopped, the system no longer names its server, so whatever takes the port later is sent no token.
  expect(existsSync(path.join(clone, '.ccattler', 'local.json'))).toBe(false);
  expect(existsSync(path.join(clone, '.ccattler', 'tokens.json'))).toBe(true);
}, 900_000);
