import type { Db } from './db.js';

/** Move the compact revision forward; returns the meta row as it was when refused. */
export async function setCompactRevision(
  db: Db,
  revision: number,
): Promise<{ ok: true } | { ok: false; revision: number; compactRevision: number }> {
  const r = await db.query<{ ok: boolean; revision: number; compactRevision: number }>(
    `WITH up AS (
       UPDATE cca_meta SET compact_revision = $1 WHERE id = 1 AND $1 <= revision AND $1 > compact_revision RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM up) AS ok, revision, compact_revision AS "compactRevision" FROM cca_meta WHERE id = 1`,
    [revision],
  );
  const row = r.rows[0]!;
  return row.ok ? { ok: true } : { ok: false, revision: row.revision, compactRevision: row.compactRevision };
}

/**
 * Delete, within one window of revisions below the compact revision, every log row no
 * read at or after it can see: tombstones, and versions superseded before it. The
 * newest live version below it stays (it answers reads at the compact revision and is
 * the prevKv of an event there). Short statements, so writers never wait on them.
 */
export async function deleteCompactedWindow(db: Db, compactRevision: number, lo: number, hi: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM cca_log l
      WHERE l.revision >= $2::bigint AND l.revision < LEAST($3::bigint, $1::bigint)
        AND (l.deleted OR EXISTS (
              SELECT 1 FROM cca_log n WHERE n.key = l.key AND n.revision > l.revision AND n.revision < $1::bigint))`,
    [compactRevision, lo, hi],
  );
  return r.rowCount ?? 0;
}

export async function oldestLogRevision(db: Db): Promise<number | null> {
  const r = await db.query<{ revision: number | null }>(`SELECT min(revision) AS revision FROM cca_log`);
  return r.rows[0]?.revision ?? null;
}
