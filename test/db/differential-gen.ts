import { Rng } from '../../jobs/sim/rng.js';
import { deleteInterval } from '../../db/txn-eval.js';
import { inInterval, intervalOf } from '../../db/keyspace.js';
import type { Compare, CompareOp, CompareTarget, KeyValue, Op, RangeRequest, TxnRequest } from '../../db/store.js';

/**
 * Random operation histories for the differential test, in a backend-neutral form:
 * - revisions are offsets from the history's start (1 = the empty state it starts from),
 * - leases are logical: n = the n-th lease granted in this history, 0 = none,
 *   NO_SUCH_LEASE = one that was never granted,
 * - keys have no prefix.
 * Each backend adapter maps these to its own revisions, lease ids and key prefix.
 */
export const NO_SUCH_LEASE = -1;

export interface WatchSpec {
  id: number;
  key?: string;
  prefix?: string;
  /** Omitted: a live watch from "now". */
  fromRevision?: number;
  prevKv: boolean;
}

export type HOp =
  | { t: 'put'; key: string; value: string; lease: number; prevKv: boolean }
  | { t: 'delete'; key: string; prefix: boolean; prevKv: boolean }
  | { t: 'txn'; req: TxnRequest }
  | { t: 'range'; req: RangeRequest }
  | { t: 'revision' }
  | { t: 'grant'; ttl: number }
  | { t: 'keepAlive'; lease: number }
  | { t: 'revoke'; lease: number }
  | { t: 'ttl'; lease: number }
  | { t: 'leases' }
  | { t: 'compact'; revision: number }
  | { t: 'watch'; w: WatchSpec };

/** The simulation's seeded generator (mulberry32): the same sequence everywhere. */
export { Rng };

export function seedOf(run: string, history: number): number {
  let h = 0x811c9dc5;
  for (const ch of `${run}:${history}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

const KEYS = ['a', 'a/x', 'a/y', 'ab', 'b', 'b/x', 'b/y', 'c/é', 'c/z', 'c/😀'] as const;
const PREFIXES = ['', 'a', 'a/', 'b/', 'c/', 'zz'] as const;
const TARGETS: CompareTarget[] = ['value', 'version', 'createRevision', 'modRevision', 'lease'];
const OPS: CompareOp[] = ['=', '!=', '<', '>'];

/** What the generator may look at: the reference state (MemoryStore's, already checked against etcd). */
export interface GenState {
  head: number;
  compactRevision: number;
  current: Map<string, KeyValue>;
  /** Logical ids granted so far (1..granted) and which are still alive. */
  granted: number;
  alive: Set<number>;
  /** Start revisions of the live watches open now: compaction stays below them (see allowed differences). */
  liveWatchStarts: number[];
  watches: number;
}

export class HistoryGen {
  private values = 0;
  /**
   * `repeatValues`: values come from a tiny set, so puts often write what a key already holds
   * (idempotent puts). etcd writes those and the Store does not, so such histories are
   * compared between the Store backends only.
   */
  constructor(
    readonly rng: Rng,
    readonly repeatValues = false,
  ) {}

  private value(): string {
    if (this.repeatValues) return this.rng.pick(['m', 'n']);
    // Unique per history: a put never writes the value a key already has (see the allowed differences).
    return `${this.rng.pick(['m', 'n', 'o'])}${++this.values}`;
  }

  private lease(s: GenState): number {
    const r = this.rng.next();
    if (r < 0.6 || s.granted === 0) return 0;
    if (r < 0.95 && s.alive.size > 0) return this.rng.pick([...s.alive]);
    return this.rng.chance(0.5) && s.granted > 0 ? this.rng.int(1, s.granted) : NO_SUCH_LEASE;
  }

  /** A lease to keep alive, revoke or ask about: mostly a live one, sometimes a revoked or unknown one. */
  private leaseTarget(s: GenState): number {
    const r = this.rng.next();
    if (r < 0.75 && s.alive.size > 0) return this.rng.pick([...s.alive]);
    if (r < 0.9 && s.granted > 0) return this.rng.int(1, s.granted);
    return NO_SUCH_LEASE;
  }

  private revisionFor(s: GenState): number {
    const r = this.rng.next();
    if (r < 0.5) return 0;
    if (r < 0.95) return this.rng.int(1, s.head);
    return s.head + this.rng.int(1, 2); // future
  }

  range(s: GenState): RangeRequest {
    const req: RangeRequest = {};
    const form = this.rng.int(0, 3);
    if (form === 0) req.key = this.rng.pick(KEYS);
    else if (form === 1) req.prefix = this.rng.pick(PREFIXES);
    else {
      const a = this.rng.pick(['', ...KEYS]);
      req.start = a;
      if (this.rng.chance(0.6)) {
        const b = this.rng.pick(KEYS);
        req.end = b < a ? a || 'a' : b; // UTF-16 order is fine for these keys; equal = empty
      }
    }
    const rev = this.revisionFor(s);
    if (rev !== 0) req.revision = rev;
    if (this.rng.chance(0.4)) req.limit = this.rng.int(1, 3);
    if (this.rng.chance(0.3)) req.reverse = true;
    if (this.rng.chance(0.15)) req.keysOnly = true;
    else if (this.rng.chance(0.1)) req.countOnly = true;
    return req;
  }

  private compare(s: GenState): Compare {
    const key = this.rng.pick(KEYS);
    const target = this.rng.pick(TARGETS);
    const op = this.rng.pick(OPS);
    const kv = s.current.get(key);
    if (target === 'value') {
      const value = kv && this.rng.chance(0.6) ? kv.value : this.rng.pick(['m', 'n', 'n5', 'o', 'z']);
      return { key, target, op, value };
    }
    if (target === 'lease') {
      const value = kv && this.rng.chance(0.5) ? kv.lease : this.lease(s);
      // Lease ids are each backend's own (etcd: random; memory/SQL: sequential; EtcdStore:
      // tagged per prefix), so only equality means the same thing everywhere: `<`/`>`
      // against an id would compare allocation schemes, not semantics.
      return { key, target, op: op === '<' ? '=' : op === '>' ? '!=' : op, value };
    }
    const actual = kv ? kv[target] : 0;
    const value = this.rng.chance(0.7) ? actual + this.rng.int(-1, 1) : this.rng.int(0, s.head + 1);
    return { key, target, op, value: Math.max(0, value) };
  }

  private branch(s: GenState): Op[] {
    const ops: Op[] = [];
    const n = this.rng.int(0, 4);
    const conflictsAllowed = this.rng.chance(0.1);
    for (let i = 0; i < n; i++) {
      const kind = this.rng.next();
      if (kind < 0.45) {
        const key = this.rng.pick(KEYS);
        const op: Op = { put: { key, value: this.value(), prevKv: this.rng.chance(0.5) } };
        const lease = this.lease(s);
        if (lease !== 0) op.put.lease = lease;
        ops.push(op);
      } else if (kind < 0.7) {
        const prefix = this.rng.chance(0.4);
        const key = prefix ? this.rng.pick(PREFIXES.filter((p) => p !== '')) : this.rng.pick(KEYS);
        ops.push({ delete: { key, prefix, prevKv: this.rng.chance(0.5) } });
      } else {
        ops.push({ range: this.range(s) });
      }
    }
    return conflictsAllowed ? ops : withoutConflicts(ops);
  }

  txn(s: GenState): TxnRequest {
    const compare = Array.from({ length: this.rng.int(0, 3) }, () => this.compare(s));
    const req: TxnRequest = { compare, success: this.branch(s) };
    if (this.rng.chance(0.7)) req.failure = this.branch(s);
    return req;
  }

  /** The next operation, given the reference state. */
  next(s: GenState): HOp {
    const r = this.rng.next();
    if (r < 0.25) {
      return { t: 'put', key: this.rng.pick(KEYS), value: this.value(), lease: this.lease(s), prevKv: this.rng.chance(0.4) };
    }
    if (r < 0.33) {
      const prefix = this.rng.chance(0.35);
      const key = prefix ? this.rng.pick(PREFIXES.filter((p) => p !== '')) : this.rng.pick(KEYS);
      return { t: 'delete', key, prefix, prevKv: this.rng.chance(0.5) };
    }
    if (r < 0.55) return { t: 'txn', req: this.txn(s) };
    if (r < 0.72) return { t: 'range', req: this.range(s) };
    if (r < 0.74) return { t: 'revision' };
    if (r < 0.8) return { t: 'grant', ttl: this.rng.pick([300, 600, 900]) };
    if (r < 0.82) return { t: 'keepAlive', lease: this.leaseTarget(s) };
    if (r < 0.85) return { t: 'revoke', lease: this.leaseTarget(s) };
    if (r < 0.88) return { t: 'ttl', lease: this.leaseTarget(s) };
    if (r < 0.89) return { t: 'leases' };
    if (r < 0.94) {
      // Compact below every live watch's start (etcd's prevKv for a live watcher is looked up
      // when the event is sent, so compacting under a live watch is timing-dependent there).
      const ceiling = Math.min(s.head + 1, ...s.liveWatchStarts.map((w) => w - 1));
      // Never 0: on a shared etcd revision 0 is outside the history, so it would compare nothing.
      const rev = this.rng.chance(0.8) ? this.rng.int(Math.max(1, s.compactRevision), Math.max(1, ceiling)) : this.rng.int(1, s.head + 1);
      if (rev <= ceiling) return { t: 'compact', revision: rev };
      return { t: 'range', req: this.range(s) };
    }
    return { t: 'watch', w: this.watchSpec(s, false) };
  }

  watchSpec(s: GenState, past: boolean): WatchSpec {
    const w: WatchSpec = { id: s.watches++, prevKv: this.rng.chance(0.6) };
    if (this.rng.chance(0.4)) w.key = this.rng.pick(KEYS);
    else w.prefix = this.rng.pick(PREFIXES);
    if (past) w.fromRevision = this.rng.chance(0.15) ? this.rng.int(1, Math.max(1, s.compactRevision)) : this.rng.int(Math.max(1, s.compactRevision), s.head);
    return w;
  }
}

/** Drop ops that would write one key twice in a branch (etcd and the Store both refuse those). */
function withoutConflicts(ops: Op[]): Op[] {
  const out: Op[] = [];
  const puts: string[] = [];
  const dels: ReturnType<typeof intervalOf>[] = [];
  for (const op of ops) {
    if ('put' in op) {
      if (puts.includes(op.put.key) || dels.some((iv) => inInterval(op.put.key, iv))) continue;
      puts.push(op.put.key);
    } else if ('delete' in op) {
      const iv = deleteInterval(op.delete);
      if (puts.some((k) => inInterval(k, iv))) continue;
      dels.push(iv);
    }
    out.push(op);
  }
  return out;
}

/** A key inside each watched range, so one final txn ends every watch at a known revision. */
export function fenceKey(w: WatchSpec): string {
  return w.key ?? `${w.prefix}~fence`;
}
