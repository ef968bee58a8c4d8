import { redactUrl } from '../core/redact.js';
import { migrateStore } from '../db/postgres/migrate.js';
import { pgFailure } from '../db/postgres/errors.js';
import { createPool } from '../db/postgres/pool.js';
import { requireSessionPooling } from '../db/postgres/session-check.js';
import { migrateJobs } from '../jobs/graphile-migrate.js';

/**
 * `cca migrate --store URL`: the schema changes alone, so pods may run with --no-migrate
 * as a user without DDL rights. Postgres: the store's migrations, then graphile-worker's
 * (the job queue). SQLite: the schema, created on first use. etcd and memory: no schema.
 * Answers one line per thing done, for the operator.
 */
export async function migrateOnly(url: string): Promise<string[]> {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  const target = redactUrl(url);
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const pool = createPool(url, 2, 'migrate');
    try {
      await requireSessionPooling(pool, target).catch((e: unknown) => {
        throw pgFailure(e, target);
      });
      const store = await migrateStore(pool, target).catch((e: unknown) => {
        throw pgFailure(e, target);
      });
      const jobs = await migrateJobs(pool, target).catch((e: unknown) => {
        throw pgFailure(e, target);
      });
      return [
        store.applied.length ? `store: applied ${store.applied.join(', ')}` : 'store: already current',
        jobs.applied > 0 ? `job queue (graphile_worker): applied ${jobs.applied} migration(s)` : 'job queue (graphile_worker): already current',
        `${target} is ready for pods started with --no-migrate`,
      ];
    } finally {
      await pool.end().catch(() => undefined);
    }
  }
  if (scheme === 'sqlite') {
    const { SqliteStore } = await import('../db/sqlite/store.js');
    const store = await SqliteStore.open(url, { expiryTimerMs: 0 });
    await store.close();
    return [store.created ? `sqlite: created the schema in ${store.path}` : `sqlite: ${store.path} already current`];
  }
  if (scheme === 'etcd' || scheme === 'etcd+https') return [`etcd has no schema: nothing to migrate at ${target}`];
  if (scheme === 'memory') return ['memory: has no schema: nothing to migrate'];
  const { openStore } = await import('../db/index.js');
  await openStore(url); // throws CCA-E0116, the unknown-URL diagnostic
  return [];
}
