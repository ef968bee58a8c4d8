import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';
import { packageRoot } from '../../core/package-root.js';

// The SQL files stay in the source tree (the package ships them); compiled code finds them there too.
const migrationsFolder = fileURLToPath(new URL('db/postgres/migrations', packageRoot(import.meta.url, 2)));

/** Any stable 64-bit number; it only has to differ from other apps' advisory locks. */
const MIGRATION_LOCK = 0x63636174_746c72n;

/**
 * Apply the drizzle-kit migrations, forward only, each in a transaction. Several pods
 * may start at once: an advisory lock lets one migrate while the others wait.
 */
export async function migrateStore(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    try {
      await migrate(drizzle({ client }), { migrationsFolder, migrationsSchema: 'cca_migrations' });
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]);
    }
  } catch (e) {
    throw new CcaError('CCA-E0117', { reason: messageOf(e) }, { cause: e });
  } finally {
    client.release();
  }
}
