import type { Db } from './db.js';

export interface LogRow {
  revision: number;
  seq: number;
  key: string;
  value: string;
  deleted: boolean;
  createRevision: number;
  version: number;
  lease: number;
  prevRevision: number;
}

/**
 * Everything a batch changes, in one statement: append the log, bring cca_kv to each
 * key's final state, drop revoked or expired leases, move the counter, and notify
 * watchers once (pg_notify serialises notifying commits, so once per batch, not per write).
 */
export async function writeChanges(db: Db, rows: LogRow[], droppedLeases: number[], revision: number): Promise<void> {
  const col = <K extends keyof LogRow>(k: K) => rows.map((r) => r[k]);
  await db.query(
    `WITH ev AS (
       SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bool[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
         AS e(revision, seq, key, value, deleted, create_revision, version, lease, prev_revision)
     ),
     ins AS (INSERT INTO cca_log SELECT * FROM ev),
     fin AS (SELECT DISTINCT ON (key) * FROM ev ORDER BY key, revision DESC, seq DESC),
     up AS (
       INSERT INTO cca_kv (key, value, create_revision, mod_revision, version, lease)
       SELECT key, value, create_revision, revision, version, lease FROM fin WHERE NOT deleted
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, create_revision = excluded.create_revision,
         mod_revision = excluded.mod_revision, version = excluded.version, lease = excluded.lease
     ),
     del AS (DELETE FROM cca_kv k USING fin WHERE fin.deleted AND k.key = fin.key),
     dl AS (DELETE FROM cca_lease WHERE id = ANY($10::bigint[])),
     m AS (UPDATE cca_meta SET revision = $11 WHERE id = 1 AND revision < $11)
     SELECT pg_notify('cca_revision', $11::text) WHERE cardinality($1::bigint[]) > 0`,
    [
      col('revision'),
      col('seq'),
      col('key'),
      col('value'),
      col('deleted'),
      col('createRevision'),
      col('version'),
      col('lease'),
      col('prevRevision'),
      droppedLeases,
      revision,
    ],
  );
}
