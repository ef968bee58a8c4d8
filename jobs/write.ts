import type { Compare, Op, Store, TxnRequest } from '../db/store.js';

/**
 * One store write a controller plans: the compares that make it conditional on what it read
 * (DESIGN rule 2, the read set) and the puts and deletes it makes, committed as one txn.
 * Every controller plans in these; a decision record's write is one too (decisions/record.ts).
 */
export interface Write {
  compares: Compare[];
  ops: Op[];
}

/** UTF-8 bytes of a string, counted without encoding it. */
export function utf8Bytes(s: string): number {
  // Nearly every key and value is ASCII: the regex scan is native and ~3x the loop's speed.
  if (!NOT_ASCII.test(s)) return s.length;
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) n += c > 0x7ff && (c < 0xd800 || c > 0xdfff) ? 2 : 1; // a surrogate pair: 4 bytes for 2 units
  }
  return n;
}

const NOT_ASCII = /[^\x00-\x7f]/;

/** The keys and values a write sends (what etcd's request limit counts, less framing). */
export function writeBytes(w: Write): number {
  let n = 0;
  for (const c of w.compares) n += utf8Bytes(c.key) + (typeof c.value === 'string' ? utf8Bytes(c.value) : 8);
  for (const op of w.ops) n += 'put' in op ? utf8Bytes(op.put.key) + utf8Bytes(op.put.value) : 'delete' in op ? utf8Bytes(op.delete.key) : 0;
  return n;
}

/** Commit one write; false when a compare failed (nothing was written: the next step plans again). */
export async function commit(store: Store, w: Write): Promise<boolean> {
  return (await store.txn({ compare: w.compares, success: w.ops })).succeeded;
}

/**
 * Commit txns that do not depend on each other, each alone, with up to `concurrency` in
 * flight (a sliding window: PostgresStore commits whatever queued while its previous batch
 * committed, so a full window means fewer, larger Postgres transactions); at 1, in order,
 * one after another (the simulation's order). How many failed their compares.
 */
export async function commitWindow(store: Store, txns: readonly TxnRequest[], concurrency = 1): Promise<number> {
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < txns.length) {
      const t = txns[next++]!;
      if (!(await store.txn(t)).succeeded) failed++;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, txns.length)) }, worker));
  return failed;
}

const txnOf = (w: Write): TxnRequest => ({ compare: w.compares, success: w.ops });

/** Commit each write in its own txn (in order at concurrency 1); how many failed their compares. */
export async function commitEach(store: Store, writes: readonly Write[], concurrency = 1): Promise<number> {
  return commitWindow(store, writes.map(txnOf), concurrency);
}

/**
 * Commit the first write alone and, only if it held, the others (each compares what the
 * first wrote, e.g. the decision it cites, and none depends on another) with up to
 * `concurrency` in flight. How many failed: 1 when the first did (the rest are not tried).
 */
export async function commitFirstThenRest(store: Store, writes: readonly Write[], concurrency = 1): Promise<number> {
  const [first, ...rest] = writes;
  if (first === undefined) return 0;
  if (!(await commit(store, first))) return 1;
  return commitEach(store, rest, concurrency);
}
