import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';
import { z } from 'zod';
import { CcaError, isCcaError, messageOf } from '../../core/diagnostics/index.js';
import { packageRoot } from '../../core/package-root.js';
import { readSchemaState } from './sql/readSchemaState.js';

// The SQL files stay in the source tree (the package ships them); compiled code finds them there too.
const migrationsFolder = fileURLToPath(new URL('db/postgres/migrations', packageRoot(import.meta.url, 2)));

/** Any stable 64-bit number; it only has to differ from other apps' advisory locks. */
const MIGRATION_LOCK = 0x63636174_746c72n;

const journalSchema = z.object({ entries: z.array(z.object({ tag: z.string().min(1), when: z.number().int() })) });

/** The migrations this version ships (drizzle-kit's journal): file tag and journal time. */
export function knownStoreMigrations(): { tag: string; when: number }[] {
  return journalSchema.parse(JSON.parse(readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8'))).entries;
}

/** Refuse a database migrated by a newer version: its tables may mean something this code does not know. */
function refuseNewer(applied: readonly number[] | null, target: string): void {
  const known = knownStoreMigrations();
  const newest = known.at(-1)!;
  const ahead = (applied ?? []).filter((at) => !known.some((k) => k.when === at));
  if (ahead.length > 0 || (applied?.length ?? 0) > known.length) {
    throw new CcaError('CCA-E0150', { what: 'store', target, found: `a migration made ${new Date(Math.max(...ahead, 0)).toISOString()}`, known: newest.tag });
  }
}

/**
 * Apply the drizzle-kit migrations, forward only, each in a transaction, and answer the
 * tags it applied (none when the schema was current). Several pods may start at once: an
 * advisory lock lets one migrate while the others wait. A database migrated by a newer
 * version is refused (CCA-E0150) before anything runs.
 */
export async function migrateStore(pool: pg.Pool, target = 'the database'): Promise<{ applied: string[] }> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    try {
      const before = (await readSchemaState(client)).store;
      refuseNewer(before, target);
      await migrate(drizzle({ client }), { migrationsFolder, migrationsSchema: 'cca_migrations' });
      const had = new Set(before ?? []);
      return { applied: knownStoreMigrations().filter((k) => !had.has(k.when)).map((k) => k.tag) };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]);
    }
  } catch (e) {
    if (isCcaError(e)) throw e;
    throw new CcaError('CCA-E0117', { reason: messageOf(e) }, { cause: e });
  } finally {
    client.release();
  }
}

/**
 * For a pod started with --no-migrate: the schema must be exactly what this version knows.
 * Behind is CCA-E0151 (run `cca migrate`), ahead CCA-E0150. Runs no DDL.
 */
export async function checkStoreSchema(pool: pg.Pool, target = 'the database'): Promise<void> {
  const applied = (await readSchemaState(pool)).store;
  refuseNewer(applied, target);
  const had = new Set(applied ?? []);
  const pending = knownStoreMigrations().filter((k) => !had.has(k.when));
  if (pending.length > 0) throw new CcaError('CCA-E0151', { what: 'store', target, pending: pending.map((p) => p.tag).join(', ') });
}
