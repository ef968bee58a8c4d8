import { readFileSync } from 'node:fs';
import { afterAll, expect, test } from 'vitest';
import pg from 'pg';
import { migrateStore } from '../../db/postgres/migrate.js';
import { createPool } from '../../db/postgres/pool.js';
import { migrateJobs } from '../../jobs/graphile-migrate.js';
import { createTestDatabase } from '../support/databases.js';

/** Every SQL block of docs/dba.md's "Monitoring queries" runs on a migrated database: the doc stays true. */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const section = readFileSync('docs/dba.md', 'utf8').split('## Monitoring queries')[1]!.split('\n## ')[0]!;
const queries = [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());

test('docs/dba.md has monitoring queries, and each one runs', async () => {
  expect(queries.length).toBeGreaterThanOrEqual(5);
  const db = await createTestDatabase('dbaq');
  cleanups.push(db.drop);
  const pool = createPool(db.url, 2, 'migrate');
  cleanups.push(() => pool.end());
  await migrateStore(pool);
  await migrateJobs(pool);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  cleanups.push(() => c.end());
  for (const q of queries) {
    const r = await c.query(q).catch((e: Error) => {
      throw new Error(`${e.message} in:\n${q}`);
    });
    expect(r.fields.length, q).toBeGreaterThan(0);
  }
});
