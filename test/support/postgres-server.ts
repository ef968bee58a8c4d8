import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type RunningPostgres } from '../../db/postgres/embedded.js';

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a container runtime answers; testcontainers throws at once when none does. */
async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * A Postgres server for tests, in the order DATABASE_URL → testcontainers → embedded.
 * The URL returned is an admin URL; tests create their own databases on it.
 */
export async function startTestPostgres(): Promise<RunningPostgres & { kind: string }> {
  const given = process.env.DATABASE_URL;
  if (given) return { url: given, kind: 'DATABASE_URL', stop: async () => undefined };
  if (await containerRuntimeAvailable()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const c = await new PostgreSqlContainer('postgres:16-alpine').start();
    return { url: c.getConnectionUri(), kind: 'testcontainers', stop: async () => void (await c.stop()) };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-pg-'));
  const port = await freePort();
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port, persistent: false, noSync: true });
  return { ...pg, kind: 'embedded' };
}
