import type { KeyValue } from '../../store.js';
import { binaryTextArray } from './text-array.js';
import { KV_COLUMNS, toKeyValue, type Db } from './db.js';

export interface KeyRegions {
  keys: string[];
  /** [start, end) intervals. */
  bounded: { start: string; end: string }[];
  /** [start, ∞) intervals. */
  unbounded: string[];
  /** Every key attached to these leases. */
  leases: number[];
}

/** The rows of the regions, as KeyValues; parameters $1..$5 are `regionParams`. */
export const ROWS_IN_REGIONS = `SELECT ${KV_COLUMNS} FROM cca_kv WHERE key = ANY($1::text[])
     UNION ALL
     SELECT k.* FROM unnest($2::text[], $3::text[]) AS r(s, e)
       CROSS JOIN LATERAL (SELECT ${KV_COLUMNS} FROM cca_kv WHERE key >= r.s AND key < r.e) k
     UNION ALL
     SELECT k.* FROM unnest($4::text[]) AS r(s)
       CROSS JOIN LATERAL (SELECT ${KV_COLUMNS} FROM cca_kv WHERE key >= r.s) k
     UNION ALL
     SELECT ${KV_COLUMNS} FROM cca_kv WHERE lease = ANY($5::bigint[]) AND lease <> 0`;

export function regionParams(regions: KeyRegions): unknown[] {
  return [binaryTextArray(regions.keys), regions.bounded.map((b) => b.start), regions.bounded.map((b) => b.end), regions.unbounded, regions.leases];
}

/** The current rows of every key a batch may read, in one round trip. */
export async function loadKeys(db: Db, regions: KeyRegions): Promise<KeyValue[]> {
  const r = await db.query<KeyValue>(ROWS_IN_REGIONS, regionParams(regions));
  return r.rows.map(toKeyValue);
}
