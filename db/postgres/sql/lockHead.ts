import type { Db } from './db.js';

/**
 * The first statement of every writing transaction: take the counter row's lock.
 * Writers queue here, so revision order is commit order, and a rollback releases the
 * lock without burning a number.
 */
export async function lockHead(db: Db): Promise<{ revision: number; compactRevision: number }> {
  const r = await db.query<{ revision: number; compactRevision: number }>(
    `SELECT revision, compact_revision AS "compactRevision" FROM cca_meta WHERE id = 1 FOR UPDATE`,
  );
  return r.rows[0]!;
}
