import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { expect, inject, test } from 'vitest';
import { demoPostgres } from '../../demo/postgres.js';
import { postgresSource } from '../support/postgres-server.js';

async function select1(url: string): Promise<unknown> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await c.connect();
    return (await c.query('SELECT 1 AS one')).rows[0];
  } finally {
    await c.end().catch(() => undefined);
  }
}

test('the harness order: DATABASE_URL first, then a container runtime, then embedded', async () => {
  expect(await postgresSource({ DATABASE_URL: 'postgres://x@db/cca' })).toBe('DATABASE_URL');
  expect(['testcontainers', 'embedded']).toContain(await postgresSource({}));
});

test('with DATABASE_URL, a demo gets a database of its own, an outage that refuses connections, and drops it at the end', async () => {
  const admin = inject('pgAdminUrl');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-demo-pg-'));
  const db = await demoPostgres(dir, 'demo_test', { DATABASE_URL: admin });
  const name = new URL(db.url).pathname.slice(1);
  expect(db.source).toBe('DATABASE_URL');
  expect(name).toMatch(/^cca_demo_test_[0-9a-f]{8}$/);
  expect(await select1(db.url)).toEqual({ one: 1 });
  let during: unknown;
  await db.outage(600, async () => {
    during = await select1(db.url).catch((e: NodeJS.ErrnoException) => e.code);
  });
  expect(during).toBe('ECONNREFUSED');
  expect(await select1(db.url)).toEqual({ one: 1 });
  await db.stop();
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  const left = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  await c.end();
  expect(left.rowCount).toBe(0);
});
