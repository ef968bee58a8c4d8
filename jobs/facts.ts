import { buildKey, encodeFact, kindOfKey, parseKey, prefixOf, type FactInput, type FactOf, type KeyKind, type KeyParams } from '../core/keys.js';
import { prefixEnd } from '../db/keyspace.js';
import type { Compare, KeyValue, Op, RangeRequest, Store } from '../db/store.js';
import { decodeMemo } from './decode-memo.js';

/**
 * Typed reads and the compares of the read-set rule. Every controller reads facts through
 * these, so each value it acts on comes with the key-value (mod revision) it must compare.
 */
export interface Fact<K extends KeyKind> {
  key: string;
  kv: KeyValue;
  value: FactOf<K>;
}

export async function getFact<K extends KeyKind>(store: Store, kind: K, ...params: KeyParams<K>): Promise<Fact<K> | undefined> {
  const key = buildKey(kind, ...params);
  const kv = await store.get(key);
  return kv ? { key, kv, value: decodeMemo.decodeKv(kind, kv) } : undefined;
}

/** Keys read per page: big reads never hold one huge response. */
const PAGE = 2_000;

/**
 * Every fact of a kind under `prefixOf(kind, ...leading)`, paged through, every page at one
 * revision (`revision`, or the current one when the first page is read), so the facts form
 * a snapshot; `revision` in the answer is that revision, to read other kinds at it. The one
 * read layer: controllers, the API, the status views and the console all read through it.
 */
export async function readFacts<K extends KeyKind>(
  store: Store,
  kind: K,
  leading: readonly string[] = [],
  revision = 0,
): Promise<{ revision: number; facts: Fact<K>[] }> {
  return readUnder(store, kind, prefixOf(kind, ...leading), revision);
}

/** `readFacts` under any prefix of the kind's keys (a controller's own key prefix), facts only. */
export async function listFacts<K extends KeyKind>(store: Store, kind: K, prefix: string, revision?: number): Promise<Fact<K>[]> {
  return (await readUnder(store, kind, prefix, revision ?? 0)).facts;
}

async function readUnder<K extends KeyKind>(store: Store, kind: K, prefix: string, revision: number): Promise<{ revision: number; facts: Fact<K>[] }> {
  const facts: Fact<K>[] = [];
  const end = prefixEnd(prefix);
  let at = revision;
  let page: RangeRequest = { prefix };
  for (;;) {
    const r = await store.range({ ...page, limit: PAGE, ...(at ? { revision: at } : {}) });
    if (!at) at = r.revision; // the first page fixes the snapshot the later pages read
    for (const kv of r.kvs) {
      // Another kind's keys may share the prefix: only this kind is decoded.
      if (kindOfKey(kv.key) !== kind) continue;
      facts.push({ key: kv.key, kv, value: decodeMemo.decodeKv(kind, kv) });
    }
    if (!r.more || r.kvs.length === 0) return { revision: at, facts };
    // Keys hold no NUL: the next possible key after the last one read.
    page = { start: r.kvs[r.kvs.length - 1]!.key + '\u0001', ...(end !== undefined ? { end } : {}) };
  }
}

/** The value read is still the value: compares its mod revision (or its absence). */
export function unchanged(f: { key: string; kv: KeyValue } | undefined, key?: string): Compare {
  if (!f) return absent(key!);
  return { key: f.key, target: 'modRevision', op: '=', value: f.kv.modRevision };
}

export function absent(key: string): Compare {
  return { key, target: 'createRevision', op: '=', value: 0 };
}

/** The key exists (e.g. a decision a later write of the same step cites). */
export function present(key: string): Compare {
  return { key, target: 'createRevision', op: '>', value: 0 };
}

/** Still the same incarnation of a key (a node's tenure is its create revision). */
export function sameTenure(key: string, tenure: number): Compare {
  return { key, target: 'createRevision', op: '=', value: tenure };
}

export function putFact<K extends KeyKind>(kind: K, params: KeyParams<K>, value: FactInput<K>): Op {
  return { put: { key: buildKey(kind, ...params), value: encodeFact(kind, value) } };
}

export function deleteKey(key: string): Op {
  return { delete: { key } };
}

/** Deduplicate compares on the same key and target (several actions in one txn read the same key). */
export function uniqueCompares(cs: readonly Compare[]): Compare[] {
  const seen = new Map<string, Compare>();
  for (const c of cs) seen.set(`${c.key}\0${c.target}`, c);
  return [...seen.values()];
}

/** Would writing `value` to a key that holds `current` change anything? Equal JSON = no write. */
export function differs(current: string | undefined, value: string): boolean {
  return current !== value;
}

/**
 * The services named by the keys under these prefixes (each keyed by service first), sorted:
 * the subjects of a controller that steps once per service.
 */
export async function servicesUnder(store: Store, prefixes: readonly string[]): Promise<string[]> {
  const names = new Set<string>();
  for (const prefix of prefixes) {
    for (const kv of (await store.range({ prefix, keysOnly: true })).kvs) {
      const service = parseKey(kv.key)?.params.service;
      if (service) names.add(service);
    }
  }
  return [...names].sort();
}
