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
