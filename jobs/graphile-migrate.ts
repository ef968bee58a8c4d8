import { Logger, runMigrations } from 'graphile-worker';
import { migrations } from 'graphile-worker/dist/generated/sql.js';
import type pg from 'pg';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
import { pgFailure } from '../db/postgres/errors.js';
import { readSchemaState } from '../db/postgres/sql/readSchemaState.js';

const quiet = new Logger(() => () => undefined);

/** The newest graphile-worker migration this installation ships. */
export function knownJobsMigration(): number {
  return Math.max(...Object.keys(migrations).map((f) => parseInt(f.slice(0, 6), 10)));
}

function refuseNewer(found: number | null, target: string): void {
  const known = knownJobsMigration();
  if (found !== null && found > known) {
    throw new CcaError('CCA-E0150', { what: 'job queue (graphile_worker)', target, found: `graphile-worker migration ${found}`, known: String(known) });
  }
}

/**
 * graphile-worker's own schema, migrated by `cca migrate` and by pods that migrate, so a pod
 * started with --no-migrate needs no DDL rights (graphile-worker's `run` then only reads
 * its migration table). Answers how many of its migrations this applied.
 */
export async function migrateJobs(pool: pg.Pool, target = 'the database'): Promise<{ applied: number }> {
  const before = (await readSchemaState(pool)).jobs;
  refuseNewer(before, target);
  try {
    await runMigrations({ pgPool: pool, logger: quiet });
  } catch (e) {
    // An outage stays an outage; anything else (no right to create the schema) is CCA-E0117.
    const f = pgFailure(e, target);
    throw f.code === 'CCA-E0118' ? new CcaError('CCA-E0117', { reason: messageOf(e) }, { cause: e }) : f;
  }
  return { applied: knownJobsMigration() - (before ?? 0) };
}

/** For --no-migrate: graphile-worker's schema must be current (CCA-E0151 behind, CCA-E0150 ahead). */
export async function checkJobsSchema(pool: pg.Pool, target = 'the database'): Promise<void> {
  const found = (await readSchemaState(pool)).jobs;
  refuseNewer(found, target);
  const known = knownJobsMigration();
  if ((found ?? 0) < known) throw new CcaError('CCA-E0151', { what: 'job queue (graphile_worker)', target, pending: `graphile-worker migrations ${(found ?? 0) + 1} to ${known}` });
}
