import { isCcaError } from '../../core/diagnostics/index.js';
import { Rng } from '../../jobs/sim/rng.js';
import type { Compare, CompareTarget, Op, Store, WatchBatch } from '../../db/store.js';

/** A seeded generator (the simulation's mulberry32), so a seed replays exactly. */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

/** CCA_SEED replays a run; otherwise a fresh seed every run (printed by the caller). */
export function seedFromEnv(): number {
  const s = process.env.CCA_SEED;
  return s ? Number(s) : Math.floor(Math.random() * 2 ** 31);
}

export type HistoryOp =
  | { op: 'put'; key: string; value: string; lease?: number; prevKv?: boolean }
  | { op: 'delete'; key: string; prefix?: boolean; prevKv?: boolean }
  | { op: 'txn'; compare: Compare[]; success: Op[]; failure: Op[] }
  | { op: 'range'; req: Parameters<Store['range']>[0] }
  | { op: 'grant' }
  | { op: 'revoke'; lease: number }
  | { op: 'ttl'; lease: number }
  | { op: 'compact'; revisionBack: number }
  | { op: 'watch'; fromBack: number; prefix: string; prevKv: boolean; mark: number };

const KEYS = ['a', 'a/1', 'a/2', 'a/2/x', 'b', 'b/1', 'é', '😀'];
const PREFIXES = ['', 'a', 'a/', 'a/2', 'b', 'c'];
const VALUES = ['', '1', '2', 'x', 'long-'.repeat(20)];
const TARGETS: CompareTarget[] = ['value', 'version', 'createRevision', 'modRevision', 'lease'];

/**
 * A random history over a small key space, so compares, idempotent puts, prefix
 * deletes and lease detaches collide often. Lease ops name leases by grant order
 * (1, 2, …), which every non-etcd backend assigns the same way.
 */
export function generateHistory(next: () => number, length: number): HistoryOp[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const int = (n: number) => Math.floor(next() * n);
  let granted = 0;
  const lease = () => {
    const r = next();
    return r < 0.02 ? 999 : granted > 0 && r < 0.3 ? granted - int(Math.min(granted, 2)) : undefined;
  };
  const writeOp = (): Op => {
    const r = next();
    if (r < 0.55) {
      const l = lease();
      return { put: { key: pick(KEYS), value: pick(VALUES), ...(l ? { lease: l } : {}), prevKv: next() < 0.3 } };
    }
    if (r < 0.8) return { delete: { key: pick(KEYS), prefix: next() < 0.1, prevKv: next() < 0.5 } };
    return { range: { prefix: pick(PREFIXES), limit: int(3), reverse: next() < 0.3 } };
  };
  const compare = (): Compare => {
    const target = pick(TARGETS);
    return {
      key: pick(KEYS),
      target,
      op: pick(['=', '!=', '<', '>'] as const),
      value: target === 'value' ? pick(VALUES) : int(12),
    };
  };
  const ops: HistoryOp[] = [];
  for (let i = 0; i < length; i++) {
    const r = next();
    if (r < 0.3) {
      const l = lease();
      ops.push({ op: 'put', key: pick(KEYS), value: pick(VALUES), ...(l ? { lease: l } : {}), prevKv: next() < 0.3 });
    } else if (r < 0.42) ops.push({ op: 'delete', key: pick(KEYS), prefix: next() < 0.3, prevKv: next() < 0.5 });
    else if (r < 0.65) {
      const n = 1 + int(3);
      ops.push({
        op: 'txn',
        compare: Array.from({ length: int(3) }, compare),
        success: Array.from({ length: n }, writeOp),
        failure: Array.from({ length: int(3) }, writeOp),
      });
    } else if (r < 0.8) {
      const req = next() < 0.3 ? { key: pick(KEYS) } : { prefix: pick(PREFIXES) };
      ops.push({
        op: 'range',
        req: { ...req, revision: next() < 0.4 ? int(8) : 0, limit: int(4), reverse: next() < 0.3, keysOnly: next() < 0.2, countOnly: next() < 0.1 },
      });
    } else if (r < 0.86) {
      ops.push({ op: 'grant' });
      granted++;
    } else if (r < 0.9) ops.push({ op: 'revoke', lease: 1 + int(granted + 1) });
    else if (r < 0.92) ops.push({ op: 'ttl', lease: 1 + int(granted + 1) });
    else if (r < 0.95) ops.push({ op: 'compact', revisionBack: int(6) });
    else ops.push({ op: 'watch', fromBack: int(10), prefix: pick(PREFIXES), prevKv: next() < 0.5, mark: i });
  }
  return ops;
}

async function drainWatch(store: Store, from: number, prefix: string, prevKv: boolean, until: number): Promise<WatchBatch[]> {
  const out: WatchBatch[] = [];
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 10_000);
  try {
    for await (const b of store.watch({ prefix, fromRevision: from, prevKv, signal: ac.signal })) {
      out.push(b);
      if (b.revision >= until) break;
    }
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return out;
}

/** Run one op and return a JSON-comparable result; coded errors compare by code. */
export async function runOp(store: Store, op: HistoryOp): Promise<unknown> {
  try {
    switch (op.op) {
      case 'put':
        return await store.put(op.key, op.value, { ...(op.lease ? { lease: op.lease } : {}), prevKv: op.prevKv ?? false });
      case 'delete':
        return await store.delete(op.key, { prefix: op.prefix ?? false, prevKv: op.prevKv ?? false });
      case 'txn':
        return await store.txn({ compare: op.compare, success: op.success, failure: op.failure });
      case 'range':
        return await store.range(op.req);
      case 'grant':
        return await store.grantLease(600);
      case 'revoke':
        return await store.revokeLease(op.lease);
      case 'ttl': {
        const t = await store.leaseTimeToLive(op.lease);
        // Remaining seconds depend on wall time; the rest must match.
        return { ...t, ttl: t.ttl > 0 ? 'alive' : t.ttl };
      }
      case 'compact': {
        const head = await store.revision();
        await store.compact(Math.max(1, head - op.revisionBack));
        return 'compacted';
      }
      case 'watch': {
        // A marker write under the watched prefix gives the watch a known last
        // revision to stop at (it is part of the history on every backend alike).
        const marked = await store.put(`${op.prefix}~w`, `mark-${op.mark}`);
        const from = Math.max(1, marked.revision - 1 - op.fromBack);
        return { marked, batches: await drainWatch(store, from, op.prefix, op.prevKv, marked.revision) };
      }
    }
  } catch (e) {
    if (isCcaError(e)) return { error: e.code };
    throw e;
  }
}
