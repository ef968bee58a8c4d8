import { CcaError } from '../core/diagnostics/index.js';
import { checkCompactRevision, checkLeaseIds, checkCompactTarget, checkLeaseTtl, checkRangeOptions, compareKeys, intervalOf, shapeRange, type KeyInterval } from './keyspace.js';
import type {
  KeyValue,
  RangeRequest,
  RangeResponse,
  Store,
  TxnRequest,
  TxnResponse,
  WatchBatch,
  WatchRequest,
  LeaseTtl,
} from './store.js';
import { evaluateTxn, readAt, validateTxn, type TxnView } from './txn-eval.js';
import { followWatch, type WatchSource } from './watch-feed.js';
import { StoreShortcuts } from './store-shortcuts.js';
import { HeadWaiters } from './waiters.js';

export interface MemoryStoreOptions {
  /** Milliseconds; the simulation passes its virtual clock. */
  now?: () => number;
  /**
   * Check lease expiry on a timer as well as before every operation. Off when the
   * clock is injected: the simulation calls expireLeases() as virtual time moves.
   */
  expiryTimerMs?: number;
}

/** One version of a key; `kv` null marks a delete (tombstone). */
interface Version {
  rev: number;
  kv: KeyValue | null;
}

interface Lease {
  id: number;
  ttl: number;
  expiresAt: number;
  keys: Set<string>;
}

/**
 * The reference implementation of the Store: etcd v3 semantics, in memory. The other
 * backends are checked against it operation by operation.
 */
export class MemoryStore extends StoreShortcuts implements Store {
  private rev = 1;
  private compactRev = 0;
  /** Every key that has history, in key order. */
  private keys: string[] = [];
  private history = new Map<string, Version[]>();
  private current = new Map<string, KeyValue>();
  private log: WatchBatch[] = [];
  private leaseTable = new Map<number, Lease>();
  private nextLeaseId = 1;
  private readonly waiters = new HeadWaiters();
  private isClosed = false;
  private readonly now: () => number;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(opts: MemoryStoreOptions = {}) {
    super();
    this.now = opts.now ?? (() => Date.now());
    const every = opts.expiryTimerMs ?? (opts.now ? 0 : 250);
    if (every > 0) {
      this.timer = setInterval(() => this.expireLeases(), every);
      this.timer.unref?.();
    }
  }

  async revision(): Promise<number> {
    this.enter();
    return this.rev;
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    this.enter();
    const iv = intervalOf(req);
    checkRangeOptions(req);
    return { ...shapeRange(readAt(this.view(), iv, req.revision ?? 0), req), revision: this.rev };
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    this.enter();
    validateTxn(req);
    const out = evaluateTxn(this.view(), req);
    if (out.events.length > 0) this.commit({ revision: this.rev + 1, events: out.events });
    return { succeeded: out.succeeded, revision: this.rev, responses: out.responses };
  }

  watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    this.enter();
    return followWatch(this.source, req);
  }

  async grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    this.enter();
    checkLeaseTtl(ttlSeconds);
    const id = this.nextLeaseId++;
    this.leaseTable.set(id, { id, ttl: ttlSeconds, expiresAt: this.now() + ttlSeconds * 1000, keys: new Set() });
    return { id, ttl: ttlSeconds };
  }

  async keepAlive(id: number): Promise<{ ttl: number }> {
    this.enter();
    const lease = this.leaseTable.get(id);
    if (!lease) throw new CcaError('CCA-E0107', { lease: id });
    lease.expiresAt = this.now() + lease.ttl * 1000;
    return { ttl: lease.ttl };
  }

  async revokeLease(id: number): Promise<{ revision: number }> {
    this.enter();
    if (!this.leaseTable.has(id)) throw new CcaError('CCA-E0107', { lease: id });
    this.dropLease(id);
    return { revision: this.rev };
  }

  async leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }> {
    this.enter();
    const lease = this.leaseTable.get(id);
    if (!lease) return { ttl: -1, grantedTtl: 0, keys: [] };
    const remaining = Math.max(0, Math.floor((lease.expiresAt - this.now()) / 1000));
    return { ttl: remaining, grantedTtl: lease.ttl, keys: [...lease.keys].sort(compareKeys) };
  }

  async leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]> {
    this.enter();
    checkLeaseIds(ids);
    return ids.map((id) => {
      const lease = this.leaseTable.get(id);
      return lease ? { ttl: Math.max(0, Math.floor((lease.expiresAt - this.now()) / 1000)), grantedTtl: lease.ttl } : { ttl: -1, grantedTtl: 0 };
    });
  }

  async leases(): Promise<{ id: number }[]> {
    this.enter();
    return [...this.leaseTable.keys()].sort((a, b) => a - b).map((id) => ({ id }));
  }

  async compact(revision: number): Promise<void> {
    this.enter();
    checkCompactRevision(revision);
    checkCompactTarget(revision, this.rev, this.compactRev);
    this.compactRev = revision;
    const survivors: string[] = [];
    for (const key of this.keys) {
      const versions = this.history.get(key)!;
      // Keep everything at or after the compact revision, and the newest live version
      // before it: that answers reads at the compact revision and is the prevKv of an
      // event at it, so a watch from the compact revision is complete. Postgres's
      // compactor applies the same rule.
      let newestBefore = -1;
      for (let i = 0; i < versions.length && versions[i]!.rev < revision; i++) newestBefore = i;
      const kept = versions.filter((v, i) => v.rev >= revision || (i === newestBefore && v.kv !== null));
      if (kept.length > 0) {
        this.history.set(key, kept);
        survivors.push(key);
      } else {
        this.history.delete(key);
      }
    }
    this.keys = survivors;
    const firstKept = this.log.findIndex((b) => b.revision >= revision);
    this.log = firstKept < 0 ? [] : this.log.slice(firstKept);
  }

  async close(): Promise<void> {
    this.isClosed = true;
    if (this.timer) clearInterval(this.timer);
    this.wake();
  }

  /** Expire every lease whose time is up; each deletes its keys in one revision. Returns how many. */
  expireLeases(): number {
    if (this.isClosed) return 0;
    const t = this.now();
    const due = [...this.leaseTable.values()].filter((l) => l.expiresAt <= t).sort((a, b) => a.id - b.id);
    for (const lease of due) this.dropLease(lease.id);
    return due.length;
  }

  private dropLease(id: number): void {
    const lease = this.leaseTable.get(id)!;
    this.leaseTable.delete(id);
    const keys = [...lease.keys].sort(compareKeys);
    if (keys.length === 0) return;
    const out = evaluateTxn(this.view(), { compare: [], success: keys.map((key) => ({ delete: { key } })) });
    this.commit({ revision: this.rev + 1, events: out.events });
  }

  private enter(): void {
    if (this.isClosed) throw new CcaError('CCA-E0113');
    this.expireLeases();
  }

  private commit(batch: WatchBatch): void {
    this.rev = batch.revision;
    for (const e of batch.events) {
      const { key } = e.kv;
      let versions = this.history.get(key);
      if (!versions) {
        versions = [];
        this.history.set(key, versions);
        this.keys.splice(this.lowerBound(key), 0, key);
      }
      const before = this.current.get(key);
      if (before && before.lease !== 0) this.leaseTable.get(before.lease)?.keys.delete(key);
      if (e.type === 'put') {
        versions.push({ rev: batch.revision, kv: e.kv });
        this.current.set(key, e.kv);
        if (e.kv.lease !== 0) this.leaseTable.get(e.kv.lease)?.keys.add(key);
      } else {
        versions.push({ rev: batch.revision, kv: null });
        this.current.delete(key);
      }
    }
    this.log.push(batch);
    this.wake();
  }

  private wake(): void {
    this.waiters.wake();
  }

  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private keysIn(iv: KeyInterval): string[] {
    if (iv.single) return this.history.has(iv.start) ? [iv.start] : [];
    const out: string[] = [];
    for (let i = this.lowerBound(iv.start); i < this.keys.length; i++) {
      const k = this.keys[i]!;
      if (iv.end !== undefined && compareKeys(k, iv.end) >= 0) break;
      out.push(k);
    }
    return out;
  }

  /** A view of the committed state, valid until the next commit. */
  private view(): TxnView {
    return {
    revision: this.rev,
    compactRevision: this.compactRev,
    get: (key) => this.current.get(key),
    range: (iv) => {
      if (iv.single) {
        const kv = this.current.get(iv.start);
        return kv ? [kv] : [];
      }
      const out: KeyValue[] = [];
      for (const k of this.keysIn(iv)) {
        const kv = this.current.get(k);
        if (kv) out.push(kv);
      }
      return out;
    },
    rangeAt: (iv, at) => {
      const out: KeyValue[] = [];
      for (const k of this.keysIn(iv)) {
        const versions = this.history.get(k)!;
        let found: Version | undefined;
        for (let i = versions.length - 1; i >= 0; i--) {
          if (versions[i]!.rev <= at) {
            found = versions[i];
            break;
          }
        }
        if (found?.kv) out.push(found.kv);
      }
      return out;
    },
    leaseExists: (id) => this.leaseTable.has(id),
    };
  }

  private readonly source: WatchSource = {
    closed: () => this.isClosed,
    head: () => this.rev,
    read: async (from) => {
      if (from < this.compactRev) {
        throw new CcaError('CCA-E0101', { revision: from, compactRevision: this.compactRev });
      }
      // Every revision after the first has exactly one batch, so the log is dense.
      const first = this.log[0]?.revision ?? this.rev + 1;
      return { batches: this.log.slice(Math.max(0, from - first)), through: this.rev };
    },
    waitBeyond: (rev, signal) => this.waiters.wait(() => this.rev > rev || this.isClosed, signal),
  };
}
