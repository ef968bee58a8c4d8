import type pg from 'pg';
import type { KeyValue } from '../../store.js';

/**
 * Anything that runs one statement: a pool, a checked-out client inside a transaction, or a
 * lane of the store's reads (laned-reads.ts).
 */
export interface Db {
  // any: pg's own default row type; each caller names its rows.
  query<R extends pg.QueryResultRow = any>(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** cca_kv columns, shaped as a KeyValue. */
export const KV_COLUMNS = `key, value, create_revision AS "createRevision", mod_revision AS "modRevision", version, lease`;

export function toKeyValue(r: KeyValue): KeyValue {
  return {
    key: r.key,
    value: r.value,
    createRevision: r.createRevision,
    modRevision: r.modRevision,
    version: r.version,
    lease: r.lease,
  };
}
