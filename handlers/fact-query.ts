import { z } from 'zod';
import { CcaError, type Diagnostic } from '../core/diagnostics/index.js';
import { decodeFact, layout, parseKey, redactFact, type KeyKind } from '../core/keys.js';
import { checkQuery, kindOfPrefix, matchesAll, project, rowOf } from '../core/query.js';
import { prefixEnd } from '../db/keyspace.js';
import type { Store } from '../db/store.js';

/** The body of `QUERY /v1/state` (and `POST /v1/state/query`); predicates are checked by core/query.ts. */
export const factQuerySchema = z.strictObject({
  prefix: z.string().min(1),
  where: z.array(z.unknown()).max(32).default([]),
  select: z.array(z.unknown()).max(64).optional(),
  /** 0 = the current revision; later pages pass the first page's. */
  revision: z.int().min(0).default(0),
  limit: z.int().min(1).max(1000).default(100),
  /** The previous page's `after`: the last key it scanned. */
  after: z.string().min(1).optional(),
});
export type FactQuery = z.output<typeof factQuerySchema>;

export interface FactQueryItem {
  key: string;
  createRevision: number;
  modRevision: number;
  version: number;
  /** The redacted fact (its key's segments added as fields), or only the selected fields. */
  fact: Record<string, unknown>;
}

export interface FactQueryAnswer {
  kind: KeyKind;
  revision: number;
  items: FactQueryItem[];
  /** More keys remain to scan: ask again with `after` and the same `revision` (the next page may hold fewer items). */
  more: boolean;
  after?: string;
  /** Keys read for this page. */
  scanned: number;
}

/** A query with problems: every located diagnostic travels, the first names the error. */
export class QueryProblems extends CcaError {
  constructor(readonly all: Diagnostic[]) {
    const first = all[0]!;
    super('CCA-E0693', { count: all.length, first: `${first.code} ${first.message}` });
  }
}

/** Keys read per store call while scanning: a page stops early once it has `limit` matches. */
const CHUNK = 500;

/**
 * Run a fact query at one revision. Predicates see the fact as any reader would (secrets
 * redacted), so a predicate on a secret's value cannot probe it.
 */
export async function runFactQuery(store: Store, q: FactQuery, maxScan: number): Promise<FactQueryAnswer> {
  const kind = kindOfPrefix(q.prefix);
  if (!kind) throw new CcaError('CCA-E0690', { prefix: q.prefix });
  const checked = checkQuery(kind, q.where, q.select);
  if (!checked.ok) throw new QueryProblems(checked.diagnostics);
  const def = layout[kind];
  const prefix = q.prefix.startsWith(def.prefix) ? q.prefix : def.prefix;
  if (q.after !== undefined && !q.after.startsWith(prefix)) throw new CcaError('CCA-E0692', { after: q.after, prefix });
  // Counting the whole prefix (not what is left after the cursor) keeps every page of one query under the same bound.
  const head = await store.range({ prefix, revision: q.revision, countOnly: true });
  const revision = q.revision === 0 ? head.revision : q.revision;
  if (head.count > maxScan) {
    const pattern = def.prefix + def.params.map((p) => `<${p}>`).join('/');
    throw new CcaError('CCA-E0691', { prefix, count: head.count, revision, max: maxScan, pattern, example: `${def.prefix}<${def.params[0]}>/` });
  }
  const end = prefixEnd(prefix);
  const items: FactQueryItem[] = [];
  let start = q.after !== undefined ? `${q.after}\u0001` : prefix;
  let scanned = 0;
  for (;;) {
    const r = await store.range({ start, ...(end !== undefined ? { end } : {}), revision, limit: CHUNK });
    for (const [i, kv] of r.kvs.entries()) {
      scanned++;
      const parsed = parseKey(kv.key);
      // A key under the prefix that the layout does not describe holds nothing a query can decode.
      if (!parsed || parsed.kind !== kind) continue;
      const fact = redactFact(kind, decodeFact(kind, kv.key, kv.value));
      const row = rowOf(kind, parsed.params, fact);
      if (!matchesAll(row, checked.value.where)) continue;
      const shown = checked.value.select ? project(row, checked.value.select) : row;
      items.push({ key: kv.key, createRevision: kv.createRevision, modRevision: kv.modRevision, version: kv.version, fact: shown });
      if (items.length === q.limit) {
        const more = i < r.kvs.length - 1 || r.more;
        return { kind, revision, items, more, ...(more ? { after: kv.key } : {}), scanned };
      }
    }
    if (!r.more || r.kvs.length === 0) return { kind, revision, items, more: false, scanned };
    start = `${r.kvs[r.kvs.length - 1]!.key}\u0001`;
  }
}
