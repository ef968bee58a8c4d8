import type { KeyValue } from '../../store.js';
import { toKeyValue, type Db } from './db.js';

/**
 * Keys at the head in one statement (one snapshot), in the order asked, null for an absent
 * one: a get and getMany, the agent routes' most frequent statement (a credential, a node
 * record and its status on every request). readRange answers a get too, but also reads the
 * head, the compact revision and a count that a get does not return.
 */
export async function readKeys(db: Db, keys: readonly string[]): Promise<(KeyValue | null)[]> {
  const r = await db.query<KeyValue>(
    `SELECT key, value, create_revision AS "createRevision", mod_revision AS "modRevision", version, lease
       FROM cca_kv WHERE key = ANY($1::text[])`,
    [keys],
  );
  const found = new Map(r.rows.map((row) => [row.key, toKeyValue(row)]));
  return keys.map((key) => found.get(key) ?? null);
}
