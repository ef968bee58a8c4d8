import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type RunningPostgres } from '../../db/postgres/embedded.js';
import { freePort } from './ports.js';

export { freePort };

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

/** Where a Postgres comes from: the tests' and the demos' one order. */
export type PostgresSource = 'DATABASE_URL' | 'testcontainers' | 'embedded';

/** DATABASE_URL when set, else a container runtime when one answers, else an embedded Postgres. */
export async function postgresSource(env: Readonly<Record<string, string | undefined>> = process.env): Promise<PostgresSource> {
  if (env.DATABASE_URL) return 'DATABASE_URL';
  return (await containerRuntimeAvailable()) ? 'testcontainers' : 'embedded';
}

/** A Postgres 16 container (testcontainers); its URL is an admin URL. */
export async function startContainerPostgres(): Promise<RunningPostgres> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const c = await new PostgreSqlContainer('postgres:16-alpine').start();
  return { url: c.getConnectionUri(), stop: async () => void (await c.stop()) };
}

/**
 * A Postgres server for tests, in the order DATABASE_URL → testcontainers → embedded.
 * The URL returned is an admin URL; tests create their own databases on it.
 */
export async function startTestPostgres(): Promise<RunningPostgres & { kind: PostgresSource }> {
  const kind = await postgresSource();
  if (kind === 'DATABASE_URL') return { url: process.env.DATABASE_URL!, kind, stop: async () => undefined };
  if (kind === 'testcontainers') return { ...(await startContainerPostgres()), kind };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-pg-'));
  const port = await freePort();
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port, persistent: false, noSync: true });
  return { ...pg, kind };
}

/** A fresh, empty database on a server, from its admin URL; drop() removes it (connections and all). */
export async function createDatabase(adminUrl: string, label = 't'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `cca_${label.replace(/\W/g, '_').slice(0, 20)}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
