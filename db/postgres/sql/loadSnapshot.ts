import type { KeyValue } from '../../store.js';
import type { Db } from './db.js';
import { ROWS_IN_REGIONS, regionParams, type KeyRegions } from './loadKeys.js';

export interface Snapshot {
  revision: number;
  compactRevision: number;
  rows: KeyValue[];
}

/**
 * The head and the current rows of every key a batch may read, taken without any lock in
 * one statement, so in one snapshot: the rows are exactly the state at that head (a writer
 * moves the head in the same transaction that changes rows).
 */
export async function loadSnapshot(db: Db, regions: KeyRegions): Promise<Snapshot> {
  type Row = { head: number; compact: number } & { [K in keyof KeyValue]: KeyValue[K] | null };
  const r = await db.query<Row>({
    name: 'cca_load_snapshot',
    text: `SELECT m.revision AS head, m.compact_revision AS compact, k.*
             FROM cca_meta m LEFT JOIN (${ROWS_IN_REGIONS}) k ON true WHERE m.id = 1`,
    values: regionParams(regions),
  });
  const first = r.rows[0]!;
  const rows: KeyValue[] = [];
  for (const x of r.rows) {
    if (x.key === null) continue;
    rows.push({ key: x.key, value: x.value!, createRevision: x.createRevision!, modRevision: x.modRevision!, version: x.version!, lease: x.lease! });
  }
  return { revision: first.head, compactRevision: first.compact, rows };
}
