/**
 * `npm start`: the whole system on one machine. An embedded Postgres with a persistent data
 * dir under .ccattler/ (or DATABASE_URL), one server pod with its workers, and one local
 * agent. Ctrl-C stops those three; the workloads' supervisors stop them when the agent's lease runs out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderPlain, toDiagnostic, exitCodeFor } from '../core/diagnostics/index.js';
import { startEmbeddedPostgres, traversableByOthers, type RunningPostgres } from '../db/postgres/embedded.js';
import { newRoleToken } from '../handlers/auth.js';
import { loadKeyring, newSecretKey, type SecretKey } from '../handlers/secret-box.js';
import { logSettings } from '../core/log-settings.js';
import { createLogger, logDiagnostic } from './log.js';
import { guardServerProcess } from './rejections.js';
import { startServer } from './start.js';
import { version } from './version.js';
import { isCompiled, packageRoot } from '../core/package-root.js';

const root = path.resolve(fileURLToPath(packageRoot(import.meta.url, 1)));
/** This file runs compiled (`npm start` builds first) or as source (tsx): the agent it starts runs the same way. */
const compiled = isCompiled(import.meta.url);
const home = path.resolve(process.env.CCA_HOME ?? path.join(root, '.ccattler'));

async function portFree(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

const tokensFile = path.join(home, 'tokens.json');

/**
 * Tokens for the local system, kept in a 0600 file so every start uses the same ones.
 * `created`: this start made them, so they are printed (once: logs keep what a terminal shows).
 */
async function localTokens(): Promise<{ admin: string; join: string; created: boolean }> {
  if (existsSync(tokensFile)) {
    await chmod(tokensFile, 0o600);
    return { ...(JSON.parse(await readFile(tokensFile, 'utf8')) as { admin: string; join: string }), created: false };
  }
  const tokens = { admin: newRoleToken('admin'), join: newRoleToken('join') };
  await writeFile(tokensFile, JSON.stringify(tokens, null, 2), { mode: 0o600 });
  await chmod(tokensFile, 0o600);
  return { ...tokens, created: true };
}

/**
 * Where this system's server listens, for `npx cca` in the checkout (cli/local-system.ts): with
 * it and tokens.json the CLI needs no CCA_SERVER or CCA_TOKEN. Removed on a clean stop, so a
 * later server on the same port (someone else's) is never sent the admin token.
 */
const localFile = path.join(home, 'local.json');
async function recordLocalServer(url: string): Promise<void> {
  const tmp = `${localFile}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ server: url })}\n`, { mode: 0o644 });
  await rename(tmp, localFile);
}

/** The key sealing secret values at rest (0600, made on the first start; CCA_SECRET_KEY overrides). */
async function localSecretKeys(): Promise<SecretKey[]> {
  const fromEnv = loadKeyring({ key: process.env.CCA_SECRET_KEY, file: process.env.CCA_SECRET_KEY_FILE });
  if (fromEnv) return fromEnv;
  const file = path.join(home, 'secret.key');
  if (!existsSync(file)) {
    await writeFile(file, `${newSecretKey()}\n`, { mode: 0o600, flag: 'wx' }).catch(() => undefined);
    await chmod(file, 0o600);
  }
  return loadKeyring({ file })!;
}

/**
 * Where the embedded Postgres keeps its data: CCA_PG_DIR, else .ccattler/postgres — unless
 * we are root and that folder sits under one the `postgres` user cannot enter (a checkout
 * under /root), then /var/lib/ccattler, one folder per checkout.
 */
async function postgresDir(): Promise<string> {
  if (process.env.CCA_PG_DIR) return path.resolve(process.env.CCA_PG_DIR);
  const local = path.join(home, 'postgres');
  if (process.getuid?.() !== 0 || !(await traversableByOthers(local))) return local;
  return path.join('/var/lib/ccattler', `postgres-${createHash('sha256').update(home).digest('hex').slice(0, 8)}`);
}

async function main(): Promise<number> {
  await mkdir(home, { recursive: true });
  const port = Number(process.env.CCA_PORT ?? 7070);
  if (!(await portFree(port))) {
    console.error(`port ${port} is taken (another ccattler?): set CCA_PORT to use another`);
    return 2;
  }
  let pg: RunningPostgres | undefined;
  let storeUrl = process.env.DATABASE_URL;
  if (!storeUrl) {
    const pgPort = Number(process.env.CCA_PG_PORT ?? 54329);
    const pgDir = await postgresDir();
    console.log(`starting Postgres (data in ${pgDir}, port ${pgPort})…`);
    pg = await startEmbeddedPostgres({ dataDir: path.join(pgDir, 'data'), port: pgPort, persistent: true });
    storeUrl = pg.url;
  }
  const tokens = await localTokens();
  const secretKeys = await localSecretKeys();
  // The pod's log under the banner: warnings and worse unless CCA_LOG_LEVEL asks for more.
  const log = createLogger(logSettings({ level: process.env.CCA_LOG_LEVEL || 'warn', format: process.env.CCA_LOG_FORMAT || undefined }, process.stdout.isTTY === true), { pod: 'local' });
  // A rejection nobody handled that no part of the pod recovers from stops everything, told
  // as a coded diagnostic (server/rejections.ts) rather than Node's stack trace.
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  const stopAsked = untilStopSignal();
  const guard = guardServerProcess(() => server, log, () => stopAsked.stop());
  server = await startServer({
    store: storeUrl,
    port,
    host: '127.0.0.1',
    openReads: false,
    adminToken: tokens.admin,
    joinToken: tokens.join,
    workers: 4,
    version,
    log,
    onDiagnostic: (d) => logDiagnostic(log, d),
    secretKeys,
  });
  const agent = startLocalAgent(server.url, tokens.join);
  await recordLocalServer(server.url);
  // The admin token is shown on the start that made it only; afterwards it is read from the file.
  const adminLine = tokens.created ? `admin token  ${tokens.admin}   (shown this once; kept in ${tokensFile}, mode 0600)` : `admin token  in ${tokensFile} (mode 0600; not shown again)`;
  const tokenExport = tokens.created ? tokens.admin : `$(node -p 'require(${JSON.stringify(tokensFile)}).admin')`;
  const finds = process.env.CCA_HOME ? `with CCA_HOME=${home}, cca finds the server and token there` : `cca finds the server and token in ${path.relative(process.cwd(), home) || '.'}/`;
  console.log(`
ccattler ${version} is running.
  server       ${server.url}   (console: ${server.url}/)
  ${adminLine}
  local agent  node "local" (process runtime), state in ${path.join(home, 'agent')}

Next, in another terminal in this checkout (${finds}):
  npx cca apply fixtures/hello.cca
  npx cca get services
From anywhere else:
  export CCA_SERVER=${server.url} CCA_TOKEN=${tokenExport}

Ctrl-C stops the server, the local agent and Postgres; the services' processes stop by themselves
when the agent's lease runs out (within ~30 s: docs/fencing.md); the next npm start runs them again.`);
  await stopAsked.asked;
  console.log('stopping…');
  await rm(localFile, { force: true });
  await stopChild(agent);
  await server.stop();
  await pg?.stop();
  const fatal = guard.fatal();
  return fatal ? exitCodeFor([fatal]) : 0;
}

/**
 * `asked` resolves on the first SIGINT/SIGTERM, or on `stop()`. A Ctrl-C reaches us twice (the terminal signals the
 * whole group, and a wrapper such as tsx relays it once more): a repeat within a second is that
 * echo and is ignored; a later one is the user insisting, and exits at once (the exit hook
 * still tells Postgres to shut down, so nothing is left running).
 */
function untilStopSignal(): { asked: Promise<void>; stop(): void } {
  let stop = () => undefined as void;
  const asked = new Promise<void>((resolve) => {
    stop = resolve;
    let first = 0;
    const onSignal = () => {
      const now = Date.now();
      if (first === 0) {
        first = now;
        resolve();
      } else if (now - first > 1_000) {
        console.error('stopping now (second Ctrl-C): workloads keep running under their supervisors');
        process.exit(130);
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  return { asked, stop: () => stop() };
}

function startLocalAgent(serverUrl: string, joinToken: string): ChildProcess | undefined {
  const entry = compiled ? path.join(root, 'dist', 'agent', 'main.js') : path.join(root, 'agent', 'main.ts');
  if (!existsSync(entry)) {
    console.error(`no ${path.relative(root, entry)} in this checkout: running without a local agent`);
    return undefined;
  }
  // The join token goes through the environment, never argv: any user of the machine can
  // read a process's arguments (ps), only its owner its environment.
  const child = spawn(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), entry, '--server', serverUrl, '--node', 'local', '--runtime', 'process', '--state-dir', path.join(home, 'agent')], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, CCA_TOKEN: joinToken, CCA_TOKEN_FILE: '' },
  });
  child.on('exit', (code, signal) => {
    if (signal !== 'SIGTERM') console.error(`the local agent exited (${signal ?? code}); workloads it started keep running under their supervisors`);
  });
  return child;
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    const d = toDiagnostic(e, 'npm start');
    console.error(renderPlain(d));
    process.exit(exitCodeFor([d]));
  },
);
