import type { KeyValue } from '../../store.js';
import { toKeyValue, type Db } from './db.js';

/**
 * One key at the head: a `get`, the agent routes' most frequent statement (a credential, a
 * node record, its status on every request). readRange answers it too, but also reads the
 * head, the compact revision and a count that a get does not return.
 */
export async function readKey(db: Db, key: string): Promise<KeyValue | null> {
  const r = await db.query<KeyValue>(
    `SELECT key, value, create_revision AS "createRevision", mod_revision AS "modRevision", version, lease
       FROM cca_kv WHERE key = $1`,
    [key],
  );
  const row = r.rows[0];
  return row ? toKeyValue(row) : null;
}

/** Several keys at the head in one statement (one snapshot), in the order asked. */
export async function readKeys(db: Db, keys: readonly string[]): Promise<(KeyValue | null)[]> {
  const r = await db.query<KeyValue>(
    `SELECT key, value, create_revision AS "createRevision", mod_revision AS "modRevision", version, lease
       FROM cca_kv WHERE key = ANY($1::text[])`,
    [keys],
  );
  const found = new Map(r.rows.map((row) => [row.key, toKeyValue(row)]));
  return keys.map((key) => found.get(key) ?? null);
}
