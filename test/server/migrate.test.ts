import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { openStore } from '../../db/index.js';
import { createTestDatabase } from '../support/databases.js';
import { cca, ccaServer } from './cli-process.js';

/**
 * `cca migrate` runs the migrations alone; a pod with --no-migrate runs none and refuses a
 * schema that is behind; any pod refuses a schema newer than it knows. Real processes on
 * the harness Postgres and on SQLite files.
 */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function query(url: string, text: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text);
  } finally {
    await c.end();
  }
}

test('Postgres: --no-migrate refuses an empty database; cca migrate prints what it applied, then nothing; the pod then starts without DDL', async () => {
  const db = await createTestDatabase('migrate');
  cleanups.push(db.drop);

  const refused = await cca(['server', '--store', db.url, '--no-migrate', '--port', '0']);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('CCA-E0151');
  expect(refused.stderr).toContain('cca migrate');
  expect((await query(db.url, `SELECT to_regclass('cca_kv')::text AS t`)).rows[0].t, '--no-migrate created a table').toBeNull();

  const first = await cca(['migrate', '--store', db.url]);
  expect(first.code, first.stderr).toBe(0);
  expect(first.stdout).toContain('store: applied 0000_store, 0001_seed_meta, 0002_reaper');
  expect(first.stdout).toMatch(/job queue \(graphile_worker\): applied \d+ migration/);
  const again = await cca(['migrate', '--store', db.url]);
  expect(again.stdout).toContain('store: already current');
  expect(again.stdout).toContain('job queue (graphile_worker): already current');

  // A pod with --no-migrate, as a role that may read and write rows but create nothing
  // (BYPASSRLS: graphile-worker's private tables have row-level security for other roles).
  const role = `cca_app_${Math.random().toString(36).slice(2, 8)}`;
  const dbName = new URL(db.url).pathname.slice(1);
  await query(db.url, `CREATE ROLE ${role} LOGIN BYPASSRLS PASSWORD 'app'; GRANT CONNECT ON DATABASE ${dbName} TO ${role};
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    GRANT USAGE ON SCHEMA public, graphile_worker, cca_migrations TO ${role};
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public, graphile_worker, cca_migrations TO ${role};
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public, graphile_worker TO ${role};
    GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA graphile_worker TO ${role};`);
  cleanups.push(async () => void (await query(db.url, `DROP OWNED BY ${role}; DROP ROLE ${role}`).catch(() => undefined)));
  const app = new URL(db.url);
  app.username = role;
  app.password = 'app';
  const pod = await ccaServer(app.toString(), ['--no-migrate', '--workers', '1']);
  cleanups.push(pod.stop);
  await pod.stop();
});

test('Postgres: a pod refuses a database migrated by a newer version (store or job queue), with or without --no-migrate', async () => {
  const db = await createTestDatabase('newer');
  cleanups.push(db.drop);
  expect((await cca(['migrate', '--store', db.url])).code).toBe(0);
  await query(db.url, `INSERT INTO cca_migrations.__drizzle_migrations (hash, created_at) VALUES ('from-the-future', 4102444800000)`);
  for (const flags of [[], ['--no-migrate']]) {
    const r = await cca(['server', '--store', db.url, '--port', '0', ...flags]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('CCA-E0150');
    expect(r.stderr).toContain('upgrade the pods');
  }
  expect((await cca(['migrate', '--store', db.url])).stderr).toContain('CCA-E0150');
  await query(db.url, `DELETE FROM cca_migrations.__drizzle_migrations WHERE hash = 'from-the-future'`);
  await query(db.url, `INSERT INTO graphile_worker.migrations (id) VALUES (999)`);
  const jobs = await cca(['server', '--store', db.url, '--port', '0', '--no-migrate']);
  expect(jobs.stderr).toContain('CCA-E0150');
  expect(jobs.stderr).toContain('graphile-worker migration 999');
});

test('SQLite: cca migrate creates the schema once; --no-migrate refuses a file without it; a newer schema version is refused', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-migrate-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'store.db');
  const refused = await cca(['server', '--store', `sqlite:${file}`, '--no-migrate', '--port', '0']);
  expect(refused.stderr).toContain('CCA-E0151');
  expect((await cca(['migrate', '--store', `sqlite:${file}`])).stdout).toContain('sqlite: created the schema');
  expect((await cca(['migrate', '--store', `sqlite:${file}`])).stdout).toContain('already current');
  const s = await openStore(`sqlite:${file}`, { sqlite: { migrate: false } });
  await s.close();
  const raw = new Database(file);
  raw.exec('UPDATE cca_meta SET schema_version = 2');
  raw.close();
  const newer = await cca(['server', '--store', `sqlite:${file}`, '--port', '0']);
  expect(newer.code).toBe(2);
  expect(newer.stderr).toContain('CCA-E0150');
});

test('etcd and memory have no schema: cca migrate says so and succeeds', async () => {
  const r = await cca(['migrate', '--store', 'etcd://127.0.0.1:1/x']);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('etcd has no schema: nothing to migrate');
  const bad = await cca(['migrate']);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('CCA-E0157');
});
