import { compareKeys, inInterval, type KeyInterval } from '../keyspace.js';
import type { KeyValue, WatchEvent } from '../store.js';
import type { TxnView } from '../txn-eval.js';

/** What the evaluator asked for that the batch has not loaded yet. */
export class NeedMore {
  constructor(
    readonly keys: string[],
    readonly intervals: KeyInterval[],
    readonly historical: { iv: KeyInterval; revision: number }[],
  ) {}
}

const historyKey = (iv: KeyInterval, revision: number) => JSON.stringify([iv.start, iv.end ?? null, iv.single, revision]);

/**
 * The state one write batch evaluates against: rows loaded under the counter lock
 * (stable until commit, since every writer holds that lock) plus the batch's own
 * earlier commits. Asking for anything not loaded throws NeedMore; the batch loads it
 * and evaluates again from the start — evaluation is pure, so that is safe.
 */
export class BatchView {
  private loaded = new Map<string, KeyValue>();
  private loadedKeys = new Set<string>();
  private loadedIntervals: KeyInterval[] = [];
  private loadedLeaseKeys = new Set<number>();
  private historicalLoaded = new Map<string, KeyValue[]>();
  private alive = new Set<number>();
  private expired = new Set<number>();
  private leasesQueried = new Set<number>();

  // Per evaluation pass:
  private overlay = new Map<string, KeyValue | null>();
  private dropped = new Set<number>();
  /** In-batch commits, for reads at a revision the batch itself made. */
  private batchEvents: { revision: number; events: WatchEvent[] }[] = [];
  revision: number;

  constructor(
    readonly baseRevision: number,
    readonly compactRevision: number,
  ) {
    this.revision = baseRevision;
  }

  addRows(rows: KeyValue[], keys: string[], intervals: KeyInterval[], leaseIds: number[]): void {
    for (const kv of rows) this.loaded.set(kv.key, kv);
    for (const k of keys) this.loadedKeys.add(k);
    this.loadedIntervals.push(...intervals);
    for (const id of leaseIds) this.loadedLeaseKeys.add(id);
  }

  addLeases(queried: number[], found: { id: number; expired: boolean }[]): void {
    for (const id of queried) this.leasesQueried.add(id);
    for (const l of found) (l.expired ? this.expired : this.alive).add(l.id);
  }

  addHistorical(iv: KeyInterval, revision: number, kvs: KeyValue[]): void {
    this.historicalLoaded.set(historyKey(iv, revision), kvs);
  }

  isLeaseKnown(id: number): boolean {
    return this.leasesQueried.has(id);
  }

  isLeaseKeysLoaded(id: number): boolean {
    return this.loadedLeaseKeys.has(id);
  }

  /** Start an evaluation pass over the loaded state. */
  reset(): void {
    this.overlay.clear();
    this.dropped.clear();
    this.batchEvents = [];
    this.revision = this.baseRevision;
  }

  commit(revision: number, events: WatchEvent[]): void {
    for (const e of events) this.overlay.set(e.kv.key, e.type === 'put' ? e.kv : null);
    this.batchEvents.push({ revision, events });
    this.revision = revision;
  }

  dropLease(id: number): void {
    this.dropped.add(id);
  }

  leaseAlive(id: number): boolean {
    return this.alive.has(id) && !this.dropped.has(id);
  }

  leaseExpired(id: number): boolean {
    return this.expired.has(id) && !this.dropped.has(id);
  }

  /** Keys attached to a lease now: loaded rows with it, as changed by this batch. */
  leaseKeys(id: number): string[] {
    const keys = new Set<string>();
    for (const kv of this.loaded.values()) if (kv.lease === id && !this.overlay.has(kv.key)) keys.add(kv.key);
    for (const [k, kv] of this.overlay) if (kv && kv.lease === id) keys.add(k);
    return [...keys].sort(compareKeys);
  }

  private covered(key: string): boolean {
    return this.loadedKeys.has(key) || this.loadedIntervals.some((iv) => inInterval(key, iv));
  }

  private intervalCovered(iv: KeyInterval): boolean {
    if (iv.single) return this.covered(iv.start);
    return this.loadedIntervals.some(
      (l) =>
        !l.single &&
        compareKeys(l.start, iv.start) <= 0 &&
        (l.end === undefined || (iv.end !== undefined && compareKeys(iv.end, l.end) <= 0)),
    );
  }

  private baseRange(iv: KeyInterval): KeyValue[] {
    if (!this.intervalCovered(iv)) throw new NeedMore([], [iv], []);
    const out: KeyValue[] = [];
    for (const kv of this.loaded.values()) if (inInterval(kv.key, iv)) out.push(kv);
    return out.sort((a, b) => compareKeys(a.key, b.key));
  }

  /** The evaluator's view as of the batch's latest commit. */
  view(): TxnView {
    return {
      revision: this.revision,
      compactRevision: this.compactRevision,
      get: (key) => {
        if (this.overlay.has(key)) return this.overlay.get(key) ?? undefined;
        if (!this.covered(key)) throw new NeedMore([key], [], []);
        return this.loaded.get(key);
      },
      range: (iv) => {
        const merged = new Map(this.baseRange(iv).map((kv) => [kv.key, kv] as const));
        for (const [k, v] of this.overlay) {
          if (!inInterval(k, iv)) continue;
          if (v) merged.set(k, v);
          else merged.delete(k);
        }
        return [...merged.values()].sort((a, b) => compareKeys(a.key, b.key));
      },
      rangeAt: (iv, revision) => {
        if (revision >= this.baseRevision) {
          // A revision this batch made: replay its commits over the pre-batch state.
          const state = new Map(this.baseRange(iv).map((kv) => [kv.key, kv] as const));
          for (const b of this.batchEvents) {
            if (b.revision > revision) break;
            for (const e of b.events) {
              if (!inInterval(e.kv.key, iv)) continue;
              if (e.type === 'put') state.set(e.kv.key, e.kv);
              else state.delete(e.kv.key);
            }
          }
          return [...state.values()].sort((a, b) => compareKeys(a.key, b.key));
        }
        const hit = this.historicalLoaded.get(historyKey(iv, revision));
        if (!hit) throw new NeedMore([], [], [{ iv, revision }]);
        return hit;
      },
      leaseExists: (id) => {
        if (!this.isLeaseKnown(id)) throw new NeedMoreLeases([id], []);
        return this.leaseAlive(id);
      },
    };
  }
}

/** Leases whose state (and, for `keysOf`, attached keys) the batch has not loaded yet. */
export class NeedMoreLeases {
  constructor(
    readonly ids: number[],
    readonly keysOf: number[],
  ) {}
}
