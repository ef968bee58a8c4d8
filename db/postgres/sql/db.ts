import type pg from 'pg';
import type { KeyValue } from '../../store.js';

/** Anything that runs a query: the pool for reads, a checked-out client inside a transaction. */
export type Db = pg.Pool | pg.ClientBase;

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
