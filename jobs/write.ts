import type { Compare, Op, Store } from '../db/store.js';

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
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) n += c > 0x7ff && (c < 0xd800 || c > 0xdfff) ? 2 : 1; // a surrogate pair: 4 bytes for 2 units
  }
  return n;
}

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

/** Commit each write in its own txn, in order; how many failed their compares. */
export async function commitEach(store: Store, writes: readonly Write[]): Promise<number> {
  let failed = 0;
  for (const w of writes) if (!(await commit(store, w))) failed++;
  return failed;
}

/** Commit writes in order, stopping at the first whose compare fails (each builds on the ones before); false then. */
export async function commitUntilFailure(store: Store, writes: readonly Write[]): Promise<boolean> {
  for (const w of writes) if (!(await commit(store, w))) return false;
  return true;
}
