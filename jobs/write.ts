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
 * Gives the event loop a turn (I/O, the store's sends) and resolves after it. Controllers
 * may not touch timers (they run in the simulation and the browser), so the server passes
 * one in (`setImmediate`); without it nothing is built ahead.
 */
export type Turn = () => Promise<void>;

/**
 * Commit txns that do not depend on each other, each alone, with up to `concurrency` in
 * flight (a sliding window: PostgresStore commits whatever queued while its previous batch
 * committed, so a full window means fewer, larger Postgres transactions); at 1, in order,
 * one after another (the simulation's order). How many failed their compares.
 *
 * `txns` may be built as they are taken (a generator): then, given a `turn`, the next
 * `concurrency` are built ahead one per turn of the event loop, while the window's txns
 * are with the store, so building and committing overlap instead of taking turns.
 */
export async function commitWindow(store: Pick<Store, 'txn'>, txns: Iterable<TxnRequest>, concurrency = 1, turn?: Turn): Promise<number> {
  const source = txns[Symbol.iterator]();
  const ready: TxnRequest[] = [];
  let exhausted = false;
  let finished = false;
  let taken: (() => void) | undefined;
  const build = (): TxnRequest | undefined => {
    if (exhausted) return undefined;
    const r = source.next();
    if (r.done) exhausted = true;
    return r.done ? undefined : r.value;
  };
  const take = (): TxnRequest | undefined => {
    const t = ready.length > 0 ? ready.shift() : build();
    taken?.();
    return t;
  };
  let failed = 0;
  const worker = async () => {
    for (let t = take(); t !== undefined; t = take()) if (!(await store.txn(t)).succeeded) failed++;
  };
  const ahead = async () => {
    while (!exhausted && !finished) {
      if (ready.length >= concurrency) {
        await new Promise<void>((resolve) => (taken = resolve));
        taken = undefined;
        continue;
      }
      await turn!();
      if (finished) return;
      const t = build();
      if (t !== undefined) ready.push(t);
    }
  };
  // An array is built already: nothing to build ahead, and no more workers than txns.
  const built = Array.isArray(txns);
  const window = Math.max(1, built ? Math.min(concurrency, txns.length) : concurrency);
  // A build that throws (a bug) ends the source; the error is the window's, after its txns settle.
  let broken: { error: unknown } | undefined;
  const building = turn && !built ? ahead().catch((error: unknown) => void (broken = { error })) : undefined;
  try {
    await Promise.all(Array.from({ length: window }, worker));
  } finally {
    finished = true;
    taken?.();
  }
  await building;
  if (broken) throw broken.error;
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
