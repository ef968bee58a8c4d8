import { decodeFact, prefixOf, type FactOf, type KeyKind } from '../core/keys.js';
import type { Store } from '../db/store.js';

export interface Fact<K extends KeyKind> {
  key: string;
  modRevision: number;
  createRevision: number;
  value: FactOf<K>;
}

/** Every fact of a kind under a prefix at one revision, decoded (a malformed one is a coded bug). */
export async function listFacts<K extends KeyKind>(
  store: Store,
  kind: K,
  leading: string[] = [],
  revision = 0,
): Promise<{ revision: number; facts: Fact<K>[] }> {
  const r = await store.range({ prefix: prefixOf(kind, ...leading), revision });
  return {
    revision: r.revision,
    facts: r.kvs.map((kv) => ({ key: kv.key, modRevision: kv.modRevision, createRevision: kv.createRevision, value: decodeFact(kind, kv.key, kv.value) })),
  };
}
