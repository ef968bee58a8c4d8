import { afterAll, expect, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';
import { generateHistory, rng, runOp, seedFromEnv } from './random-history.js';

const seed = seedFromEnv();
const HISTORIES = Number(process.env.CCA_HISTORIES ?? 25);
const LENGTH = 120;

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

test(`random histories: PostgresStore answers exactly as MemoryStore (seed ${seed}, replay with CCA_SEED=${seed})`, async () => {
  console.log(`postgres-history seed=${seed} (replay: CCA_SEED=${seed} npx vitest run test/db/postgres-history.test.ts)`);
  const db = await createTestDatabase('hist');
  dbs.push(db);
  for (let h = 0; h < HISTORIES; h++) {
    const next = rng(seed + h);
    const ops = generateHistory(next, LENGTH);
    await resetDatabase(db.url);
    const pgStore = await PostgresStore.open(db.url);
    const ref = new MemoryStore();
    try {
      for (let i = 0; i < ops.length; i++) {
        const want = await runOp(ref, ops[i]!);
        const got = await runOp(pgStore, ops[i]!);
        expect(got, `history ${h} (seed ${seed + h}) op ${i}: ${JSON.stringify(ops[i])}`).toEqual(want);
      }
    } finally {
      await pgStore.close();
      await ref.close();
    }
  }
}, 180_000);

/** Back to an empty store at revision 1 with lease ids from 1, without a new database. */
async function resetDatabase(url: string): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SELECT 1 FROM pg_tables WHERE tablename = 'cca_meta'`).then(async (r) => {
      if (r.rowCount === 0) return;
      await c.query(`TRUNCATE cca_kv, cca_log, cca_lease RESTART IDENTITY; UPDATE cca_meta SET revision = 1, compact_revision = 0`);
    });
  } finally {
    await c.end();
  }
}
