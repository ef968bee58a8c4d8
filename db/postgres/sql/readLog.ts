import type { KeyInterval } from '../../keyspace.js';
import type { KeyValue, WatchBatch, WatchEvent } from '../../store.js';
import type { Db } from './db.js';
import { keyCondition } from './keyCondition.js';

interface LogRead {
  head: number;
  compactRevision: number;
  revision: number | null;
  key: string;
  value: string;
  deleted: boolean;
  createRevision: number;
  version: number;
  lease: number;
  prevRevision: number;
  pValue: string | null;
  pCreateRevision: number;
  pVersion: number;
  pLease: number;
}

export interface LogPage {
  batches: WatchBatch[];
  head: number;
  compactRevision: number;
  /** The last revision this page covers: min(to, head). */
  through: number;
}

/**
 * Watch history for revisions from..to (capped at the head read in the same snapshot),
 * each event with its prevKv joined from the row it replaced. Scans the log's primary
 * key (revision, seq) and filters by key.
 */
export async function readLog(db: Db, from: number, to: number, iv: KeyInterval): Promise<LogPage> {
  const cond = keyCondition('l.key', iv, 3);
  const r = await db.query<LogRead>(
    `WITH m AS (SELECT revision, compact_revision FROM cca_meta WHERE id = 1)
     SELECT m.revision AS head, m.compact_revision AS "compactRevision",
            l.revision, l.key, l.value, l.deleted, l.create_revision AS "createRevision", l.version, l.lease,
            l.prev_revision AS "prevRevision", p.value AS "pValue", p.create_revision AS "pCreateRevision",
            p.version AS "pVersion", p.lease AS "pLease"
       FROM m
       LEFT JOIN LATERAL (
         SELECT * FROM cca_log l WHERE l.revision >= $1 AND l.revision <= LEAST($2, m.revision) AND ${cond.sql}
          ORDER BY l.revision, l.seq
       ) l ON TRUE
       -- LATERAL … LIMIT 1 keeps this an index probe per event: as a plain join the
       -- planner may hash the whole log.
       LEFT JOIN LATERAL (
         SELECT p.value, p.create_revision, p.version, p.lease FROM cca_log p
          WHERE l.prev_revision <> 0 AND p.key = l.key AND p.revision = l.prev_revision AND NOT p.deleted LIMIT 1
       ) p ON TRUE
      ORDER BY l.revision, l.seq`,
    [from, to, ...cond.params],
  );
  const first = r.rows[0]!;
  const batches: WatchBatch[] = [];
  for (const row of r.rows) {
    if (row.revision === null) continue;
    const kv: KeyValue = row.deleted
      ? { key: row.key, value: '', createRevision: 0, modRevision: row.revision, version: 0, lease: 0 }
      : {
          key: row.key,
          value: row.value,
          createRevision: row.createRevision,
          modRevision: row.revision,
          version: row.version,
          lease: row.lease,
        };
    const event: WatchEvent = { type: row.deleted ? 'delete' : 'put', kv };
    if (row.pValue !== null) {
      event.prevKv = {
        key: row.key,
        value: row.pValue,
        createRevision: row.pCreateRevision,
        modRevision: row.prevRevision,
        version: row.pVersion,
        lease: row.pLease,
      };
    }
    const last = batches[batches.length - 1];
    if (last && last.revision === row.revision) last.events.push(event);
    else batches.push({ revision: row.revision, events: [event] });
  }
  return { batches, head: first.head, compactRevision: first.compactRevision, through: Math.min(to, first.head) };
}
