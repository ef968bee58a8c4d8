import type { Db } from './db.js';

export async function readHead(db: Db): Promise<{ revision: number; compactRevision: number }> {
  const r = await db.query<{ revision: number; compactRevision: number }>(
    `SELECT revision, compact_revision AS "compactRevision" FROM cca_meta WHERE id = 1`,
  );
  return r.rows[0]!;
}
