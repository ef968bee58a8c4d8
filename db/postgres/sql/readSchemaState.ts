import type { Db } from './db.js';

/**
 * What the database's own migration records say: the store's (drizzle-kit, schema
 * cca_migrations: one row per applied file, `created_at` = the file's journal time) and
 * graphile-worker's (schema graphile_worker: one row per applied migration number).
 * Either is null when that schema was never installed.
 */
export async function readSchemaState(db: Db): Promise<{ store: number[] | null; jobs: number | null }> {
  const r = await db.query<{ store: string | null; jobs: string | null }>(
    `SELECT to_regclass('cca_migrations.__drizzle_migrations')::text AS store,
            to_regclass('graphile_worker.migrations')::text AS jobs`,
  );
  const row = r.rows[0]!;
  const store = row.store
    ? (await db.query<{ at: string }>('SELECT created_at::text AS at FROM cca_migrations.__drizzle_migrations ORDER BY created_at')).rows.map((x) => Number(x.at))
    : null;
  const jobs = row.jobs ? ((await db.query<{ id: number | null }>('SELECT max(id)::int AS id FROM graphile_worker.migrations')).rows[0]!.id ?? 0) : null;
  return { store, jobs };
}
