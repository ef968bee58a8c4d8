import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { openStore } from '../../db/index.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';
import { needs } from '../support/prerequisites.js';
import { waitFor } from '../support/wait.js';
import { codeOf } from './conformance.js';

/**
 * A real PgBouncer (Debian's) in front of the harness Postgres: in transaction mode the
 * store refuses to open (CCA-E0152, use session pooling); in session mode it works, watches
 * included (LISTEN/NOTIFY).
 */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** PgBouncer on a free port forwarding to the database of `dbUrl`; run as `nobody` when we are root (it refuses root). */
async function startPgBouncer(dbUrl: string, mode: 'session' | 'transaction'): Promise<string> {
  const u = new URL(dbUrl);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-pgbouncer-'));
  await chmod(dir, 0o755);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const port = await freePort();
  const db = u.pathname.slice(1);
  const ini = path.join(dir, 'pgbouncer.ini');
  await writeFile(
    ini,
    [
      '[databases]',
      `${db} = host=${u.hostname} port=${u.port || 5432} dbname=${db} user=${decodeURIComponent(u.username)} password=${decodeURIComponent(u.password)}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir =`,
      'auth_type = any',
      `pool_mode = ${mode}`,
      // node-postgres sends these as startup parameters; PgBouncer 1.18 refuses unknown ones.
      'ignore_startup_parameters = extra_float_digits,options,statement_timeout,lock_timeout,idle_in_transaction_session_timeout',
      '',
    ].join('\n'),
  );
  await chmod(ini, 0o644);
  const args = process.getuid?.() === 0 ? ['-u', 'nobody', ini] : [ini];
  const child: ChildProcess = spawn('/usr/sbin/pgbouncer', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (d) => (log += d));
  child.stderr!.on('data', (d) => (log += d));
  cleanups.push(async () => void child.kill('SIGKILL'));
  await waitFor(
    `pgbouncer (${mode}) to listen`,
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.end();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    { timeoutMs: 10_000 },
  ).catch((e: Error) => {
    throw new Error(`${e.message}\npgbouncer printed:\n${log}`);
  });
  const out = new URL(dbUrl);
  out.port = String(port);
  return out.toString();
}

describe.runIf(needs('pgbouncer'))('PgBouncer', () => {
  test('transaction pooling is refused with CCA-E0152, saying to use session pooling', async () => {
    const db = await createTestDatabase('bouncer_tx');
    cleanups.push(db.drop);
    const url = await startPgBouncer(db.url, 'transaction');
    let message = '';
    const code = await codeOf(
      openStore(url).catch((e: unknown) => {
        if (isCcaError(e)) message = `${e.diagnostic.message} ${e.diagnostic.fix}`;
        throw e;
      }),
    );
    expect(code, message).toBe('CCA-E0152');
    expect(message).toContain('transaction or statement mode');
    expect(message).toContain('pool_mode = session');
  });

  test('session pooling works: writes, reads and a watch woken by NOTIFY', async () => {
    const db = await createTestDatabase('bouncer_s');
    cleanups.push(db.drop);
    const url = await startPgBouncer(db.url, 'session');
    const store = await openStore(url, { postgres: { watchPollMs: 60_000 } });
    cleanups.push(() => store.close());
    const from = (await store.put('/a', '1')).revision + 1;
    const ac = new AbortController();
    const seen = (async () => {
      for await (const b of store.watch({ prefix: '/', fromRevision: from, signal: ac.signal })) return b.events[0]!.kv.key;
      return undefined;
    })();
    await store.put('/b', '2');
    expect(await seen).toBe('/b');
    ac.abort();
    expect((await store.get('/a'))?.value).toBe('1');
  });
});
