import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { closeSync, copyFileSync, openSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type RunningPostgres } from '../../db/postgres/embedded.js';
import { newRoleToken } from '../../handlers/auth.js';
import { freePort } from '../../test/support/postgres-server.js';
import { onInterrupt } from './cleanup.js';
import { sleep } from './usage.js';
import { nodeEntry } from '../../agent/node-entry.js';

const root = path.resolve(import.meta.dirname, '..', '..');

/** One server pod as a real process on an embedded Postgres (fsync on), its log in a file. */
export interface BenchPod {
  url: string;
  pgUrl: string;
  admin: string;
  join: string;
  pid: number;
  dir: string;
  /** The pod's log so far (stderr), for a failure's evidence. */
  log(): string;
  /** How the pod ended when it ended by itself ('' while it runs). */
  exited(): string;
  stop(): Promise<void>;
}

/**
 * Start Postgres and one pod (`server/main.ts --workers 2` through tsx, as bench:server and
 * bench:system always have). `nodeArgs` go to the pod's node (e.g. --cpu-prof, which Node
 * refuses in NODE_OPTIONS).
 */
export async function startPod(name: string, nodeArgs: string[] = []): Promise<BenchPod> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `cca-bench-${name}-`));
  const pg: RunningPostgres = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort(), persistent: false });
  const admin = newRoleToken('admin');
  const join = newRoleToken('join');
  const port = await freePort();
  const logFile = path.join(dir, 'pod.log');
  const fd = openSync(logFile, 'a');
  let pod: ChildProcess;
  try {
    pod = spawn(process.execPath, [...nodeArgs, ...nodeEntry(import.meta.url, '../../server/main'), '--store', pg.url, '--port', String(port), '--workers', '2'], {
      cwd: root,
      env: { ...process.env, CCA_ADMIN_TOKEN: admin, CCA_JOIN_TOKEN: join, CCA_LOG_FORMAT: 'json' },
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  const url = `http://127.0.0.1:${port}`;
  const log = () => readFileSync(logFile, 'utf8');
  let forget = () => undefined as void;
  let ended = '';
  const stop = async () => {
    forget();
    stopping = true;
    if (ended) {
      // The pod ended by itself: keep its log, the only evidence of why.
      const kept = path.join(os.tmpdir(), `cca-bench-${name}-pod-${pod.pid}.log`);
      copyFileSync(logFile, kept);
      process.stderr.write(`the pod ${ended}; its log: ${kept}\n`);
    }
    if (pod.exitCode === null && pod.signalCode === null) {
      const exited = new Promise((r) => pod.once('exit', r));
      pod.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (pod.exitCode === null && pod.signalCode === null) {
        pod.kill('SIGKILL');
        await exited;
      }
    }
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  };
  forget = onInterrupt(stop);
  let stopping = false;
  pod.once('exit', (code, signal) => {
    if (!stopping) ended = `exited by itself (${signal ?? `code ${code}`})`;
  });
  for (let i = 0; ; i++) {
    if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) break;
    if (pod.exitCode !== null || i > 1200) {
      const tail = log().slice(-2000);
      await stop();
      throw new Error(`the pod did not become ready:\n${tail}`);
    }
    await sleep(100);
  }
  return { url, pgUrl: pg.url, admin, join, pid: pod.pid!, dir, log, exited: () => ended, stop };
}
