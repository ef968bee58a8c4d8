import type { KeyInterval } from '../../keyspace.js';
import type { KeyValue } from '../../store.js';
import { toKeyValue, type Db } from './db.js';
import { keyCondition } from './keyCondition.js';

export interface RangeRead {
  kvs: KeyValue[];
  count: number;
  head: number;
  compactRevision: number;
}

export interface RangeShape {
  /** 0 = current state. */
  revision: number;
  /** 0 = all. */
  limit: number;
  reverse: boolean;
  keysOnly: boolean;
  countOnly: boolean;
}

/**
 * A page of a range plus its total count and the head revision, from one snapshot.
 * Current reads use cca_kv; reads at a past revision take each key's newest log row
 * at or below it (index cca_log_key_revision).
 */
export async function readRange(db: Db, iv: KeyInterval, shape: RangeShape): Promise<RangeRead> {
  const historical = shape.revision > 0;
  const cond = keyCondition('key', iv, historical ? 3 : 2);
  const source = historical
    ? `(SELECT * FROM (SELECT DISTINCT ON (key) key, value, create_revision, revision AS mod_revision, version, lease, deleted
          FROM cca_log WHERE ${cond.sql} AND revision <= $2 ORDER BY key, revision DESC) h WHERE NOT deleted)`
    : `(SELECT key, value, create_revision, mod_revision, version, lease FROM cca_kv WHERE ${cond.sql})`;
  const limit = shape.countOnly ? 0 : shape.limit > 0 ? shape.limit : null;
  const r = await db.query<KeyValue & { head: number; compactRevision: number; count: number }>(
    `WITH m AS (SELECT revision, compact_revision FROM cca_meta WHERE id = 1),
          src AS ${historical ? 'MATERIALIZED' : 'NOT MATERIALIZED'} ${source},
          page AS (SELECT * FROM src ORDER BY key ${shape.reverse ? 'DESC' : 'ASC'} LIMIT $1)
     SELECT m.revision AS head, m.compact_revision AS "compactRevision", (SELECT count(*) FROM src)::int AS count,
            p.key, ${shape.keysOnly ? `''` : 'p.value'} AS value, p.create_revision AS "createRevision",
            p.mod_revision AS "modRevision", p.version, p.lease
       FROM m LEFT JOIN page p ON TRUE
      ORDER BY p.key ${shape.reverse ? 'DESC' : 'ASC'}`,
    historical ? [limit, shape.revision, ...cond.params] : [limit, ...cond.params],
  );
  const first = r.rows[0]!;
  return {
    head: first.head,
    compactRevision: first.compactRevision,
    count: first.count,
    kvs: r.rows.filter((row) => row.key !== null).map(toKeyValue),
  };
}
