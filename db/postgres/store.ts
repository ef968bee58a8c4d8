import type pg from 'pg';
import { CcaError, type Diagnostic } from '../../core/diagnostics/index.js';
import { checkCompactRevision, checkLeaseIds, checkLeaseTtl, intervalOf, limits } from '../keyspace.js';
import type {
  RangeRequest,
  RangeResponse,
  Store,
  TxnRequest,
  TxnResponse,
  WatchBatch,
  WatchRequest,
  LeaseTtl,
  KeyValue,
} from '../store.js';
import { validateTxn } from '../txn-eval.js';
import { StoreShortcuts } from '../store-shortcuts.js';
import { followWatch } from '../watch-feed.js';
import { pgFailure, redactUrl } from './errors.js';
import { checkStoreSchema, migrateStore } from './migrate.js';
import { requireSessionPooling } from './session-check.js';
import { createPool, timeCheckouts } from './pool.js';
import { LanedReads } from './laned-reads.js';
import type { Db } from './sql/db.js';
import { deleteCompactedWindow, oldestLogRevision, setCompactRevision } from './sql/compact.js';
import { readHead } from './sql/readHead.js';
import { readKeys } from './sql/readKeys.js';
import { rangeOn } from './range.js';
import * as leaseSql from './sql/leases.js';
import type { StoreObserver } from './observer.js';
import { WatchHub } from './watch-hub.js';
import type { CommitHook } from './batch-apply.js';
import { WriteBatcher, type WriteItem } from './write-batcher.js';

export interface PostgresStoreOptions {
  /**
   * Connections, at least 2: one is the write batch's alone (one batch is in flight at a
   * time, and it never queues behind reads), the rest serve reads; LISTEN uses its own.
   */
  poolSize?: number;
  /** false: apply no migration, refuse a schema that is behind (CCA-E0151); default true. */
  migrate?: boolean;
  /** Client transactions per Postgres transaction at most. */
  maxBatch?: number;
  leaseReaperMs?: number;
  /** No reap for this long means leases could not be kept alive: renew them all once. */
  leaseSilenceMs?: number;
  watchPollMs?: number;
  /** Bytes of recent revisions kept in memory for watchers at the live edge (and at most 4,096 revisions). */
  watchRingBytes?: number;
  /** Revisions per compaction delete statement. */
  compactWindow?: number;
  onDiagnostic?: (d: Diagnostic) => void;
  /** Runs inside every write batch's transaction with the changed keys (the server enqueues controller jobs). */
  commitHook?: CommitHook;
  /** Commit batches and watch reads, for the server's metrics (db/postgres/observer.ts). */
  observer?: StoreObserver;
}

type Distribute<T> = T extends unknown ? Omit<T, 'resolve' | 'reject'> : never;

/** What a store and its interactive lane share: the reads, one batcher, one hub, the pools, whether closed. */
interface Shared {
  reads: LanedReads;
  batcher: WriteBatcher;
  hub: WatchHub;
  /** The pools to end at close: the reads', the write batch's. */
  pools: pg.Pool[];
  state: { closed: boolean; reaper?: ReturnType<typeof setInterval> };
}

/**
 * The Store on Postgres: writes batched through one counter lock (see WriteBatcher),
 * reads straight from the pool, watches through one WatchHub per store, lease expiry
 * by a reaper that any number of processes may run at once.
 *
 * Two lanes, as a cluster's API gives people priority over its own machinery: `interactive()`
 * is the same store for requests someone waits on (a user's apply, get, query): its reads
 * take the next free read connection before any background read (controllers, agents)
 * that waits (laned-reads.ts), and its writes go into the next batch ahead of the
 * background's. Otherwise a person's read queued behind a busy pod's hundreds of step and
 * agent reads (bench:apply-latency: 10-250 ms for a connection).
 */
export class PostgresStore extends StoreShortcuts implements Store {
  private readonly batcher: WriteBatcher;
  private readonly hub: WatchHub;
  private reaping = false;
  private lane: PostgresStore | undefined;
  /** This lane's reads. */
  private readonly pool: Db;

  private constructor(
    private readonly shared: Shared,
    private readonly target: string,
    private readonly opts: Required<Omit<PostgresStoreOptions, 'poolSize' | 'commitHook' | 'migrate' | 'observer'>> & { commitHook?: CommitHook; observer?: StoreObserver },
    private readonly interactiveLane = false,
  ) {
    super();
    this.pool = shared.reads.lane(interactiveLane ? 'interactive' : 'background');
    this.batcher = shared.batcher;
    this.hub = shared.hub;
  }

  /**
   * This store for requests a person waits on: reads ahead of the background's for the next
   * free connection, writes ahead of them in the batch queue. Same data, same guarantees;
   * closing either closes both.
   */
  interactive(): Store {
    if (this.interactiveLane) return this;
    this.lane ??= new PostgresStore(this.shared, this.target, this.opts, true);
    return this.lane;
  }

  /**
   * The newest revision this pod knows was committed — its own commits and the NOTIFYs it
   * heard — without a round trip: what a read from the pod's read mirror must reach.
   */
  knownHead(): number {
    return this.hub.head();
  }

  private get isClosed(): boolean {
    return this.shared.state.closed;
  }

  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    // The write batch gets a connection of its own: a batch that queued behind the reads
    // for a connection held up every write behind it (a busy pod's reads waited 10-250 ms
    // for one, bench:apply-latency). The same application_name for both: one budget, pool-size.
    const size = Math.max(2, options.poolSize ?? 10);
    const pool = createPool(url, size - 1);
    const writePool = createPool(url, 1);
    const all = [pool, writePool];
    const poolWait = options.observer?.poolWait;
    if (poolWait) timeCheckouts(writePool, (seconds) => poolWait({ seconds }));
    const laned = new LanedReads(pool, size - 1, poolWait ? (seconds) => poolWait({ seconds }) : undefined);
    try {
      await requireSessionPooling(pool, redactUrl(url), writePool);
      if (options.migrate === false) await checkStoreSchema(pool, redactUrl(url));
      else await migrateStore(pool, redactUrl(url));
      const opts = {
        maxBatch: options.maxBatch ?? 256,
        leaseReaperMs: options.leaseReaperMs ?? 250,
        leaseSilenceMs: options.leaseSilenceMs ?? 5_000,
        watchPollMs: options.watchPollMs ?? 500,
        watchRingBytes: options.watchRingBytes ?? 64 * 1024 * 1024,
        compactWindow: options.compactWindow ?? 10_000,
        onDiagnostic: options.onDiagnostic ?? (() => undefined),
        ...(options.commitHook ? { commitHook: options.commitHook } : {}),
        ...(options.observer ? { observer: options.observer } : {}),
      };
      const target = redactUrl(url);
      const hub = new WatchHub(laned.lane('background'), {
        url,
        target,
        pollMs: opts.watchPollMs,
        ringRevisions: 4096,
        ringBytes: opts.watchRingBytes,
        pageRevisions: 1000,
        onDiagnostic: opts.onDiagnostic,
        ...(opts.observer ? { observer: opts.observer } : {}),
      }, laned.lane('interactive'));
      const batcher = new WriteBatcher(writePool, {
        maxBatch: opts.maxBatch,
        target,
        onCommit: (rev, own) => hub.noteCommitted(own.before, rev, own.batches),
        ownCommit: (before) => hub.ownCommit(before),
        // People's write batches run beside the background's, on a read connection taken in
        // the interactive lane (the next to free, ahead of queued background reads).
        people: () => laned.checkout('interactive'),
        ...(opts.commitHook ? { hook: opts.commitHook } : {}),
        ...(opts.observer ? { observer: opts.observer } : {}),
      });
      const store = new PostgresStore({ reads: laned, batcher, hub, pools: all, state: { closed: false } }, target, opts);
      await store.hub.start();
      // 0 = the server runs lease expiry as a scheduled job instead of a per-process timer.
      if (store.opts.leaseReaperMs > 0) store.startReaper();
      return store;
    } catch (e) {
      await Promise.all(all.map((p) => p.end())).catch(() => undefined);
      throw pgFailure(e, redactUrl(url));
    }
  }

  async revision(): Promise<number> {
    this.enter();
    // A person's read barrier: on the watch connection, never queued behind the pool's reads;
    // the pool when that connection is down or its read failed.
    const onWatch = this.interactiveLane ? this.hub.headNow()?.catch(() => undefined) : undefined;
    const h = (await onWatch) ?? (await this.q(() => readHead(this.pool)));
    return h.revision;
  }

  /** At the head, one plain statement (sql/readKeys.ts); at a revision, a range of one key. */
  override async get(key: string, opts: { revision?: number } = {}): Promise<KeyValue | null> {
    if (opts.revision !== undefined) return super.get(key, opts);
    this.enter();
    intervalOf({ key });
    return (await this.q(() => readKeys(this.pool, [key])))[0]!;
  }

  /** One statement, not a txn: on Postgres every txn goes through the write batcher and its lock. */
  override async getMany(keys: readonly string[]): Promise<(KeyValue | null)[]> {
    this.enter();
    if (keys.length > limits.maxTxnOps) throw new CcaError('CCA-E0109', { ops: keys.length, max: limits.maxTxnOps, branch: 'getMany' });
    for (const key of keys) intervalOf({ key });
    if (keys.length === 0) return [];
    return this.q(() => readKeys(this.pool, keys));
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    this.enter();
    intervalOf(req);
    return this.q(() => rangeOn(this.pool, req));
  }

  txn(req: TxnRequest): Promise<TxnResponse> {
    this.enter();
    validateTxn(req);
    return this.write<TxnResponse>({ kind: 'txn', req });
  }

  watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    this.enter();
    return followWatch(this.hub, req);
  }

  /** What the watch ring holds in memory now (tests, metrics). */
  watchRingSize(): { revisions: number; bytes: number } {
    return this.hub.ringSize();
  }

  async grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    this.enter();
    checkLeaseTtl(ttlSeconds);
    const id = await this.q(() => leaseSql.grantLease(this.pool, ttlSeconds));
    return { id, ttl: ttlSeconds };
  }

  async keepAlive(id: number): Promise<{ ttl: number }> {
    this.enter();
    let ttl = await this.q(() => leaseSql.keepAliveLease(this.pool, id));
    // After a silence (every pod or the store down) the reaper's next pass renews every lease;
    // a keepalive that comes first makes that pass now, for all leases at once, so no agent is
    // refused for a lease about to be renewed and none is renewed ahead of its peers.
    if (ttl === null && (await this.renewAfterSilence()) > 0) ttl = await this.q(() => leaseSql.keepAliveLease(this.pool, id));
    if (ttl === null) throw new CcaError('CCA-E0107', { lease: id });
    return { ttl };
  }

  revokeLease(id: number): Promise<{ revision: number }> {
    this.enter();
    return this.write<{ revision: number }>({ kind: 'revoke', lease: id });
  }

  async leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }> {
    this.enter();
    return (await this.q(() => leaseSql.leaseTimeToLive(this.pool, id))) ?? { ttl: -1, grantedTtl: 0, keys: [] };
  }

  async leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]> {
    this.enter();
    checkLeaseIds(ids);
    if (ids.length === 0) return [];
    const live = await this.q(() => leaseSql.leasesTimeToLive(this.pool, ids));
    return ids.map((id) => live.get(id) ?? { ttl: -1, grantedTtl: 0 });
  }

  async leases(): Promise<{ id: number }[]> {
    this.enter();
    return (await this.q(() => leaseSql.listLiveLeases(this.pool))).map((id) => ({ id }));
  }

  async compact(revision: number): Promise<void> {
    this.enter();
    checkCompactRevision(revision);
    const set = await this.q(() => setCompactRevision(this.pool, revision));
    if (!set.ok) {
      if (revision > set.revision) throw new CcaError('CCA-E0102', { revision, current: set.revision });
      throw new CcaError('CCA-E0101', { revision, compactRevision: set.compactRevision });
    }
    this.hub.noteCompacted(revision);
    const oldest = (await this.q(() => oldestLogRevision(this.pool))) ?? revision;
    for (let lo = oldest; lo < revision; lo += this.opts.compactWindow) {
      await this.q(() => deleteCompactedWindow(this.pool, revision, lo, lo + this.opts.compactWindow));
    }
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.shared.state.closed = true;
    clearInterval(this.shared.state.reaper);
    await this.batcher.idle();
    await this.hub.close();
    await Promise.all(this.shared.pools.map((p) => p.end()));
  }

  /** Expire due leases now (the reaper also does this on its timer). Returns how many it expired. */
  async expireLeases(): Promise<number> {
    if ((await this.renewAfterSilence()) > 0) return 0;
    const due = await this.q(() => leaseSql.listExpiredLeases(this.pool, 100));
    const done = await Promise.all(due.map((lease) => this.write<boolean>({ kind: 'expire', lease }).catch(() => false)));
    return done.filter(Boolean).length;
  }

  /** Renew every lease once if nobody reaped for `leaseSilenceMs` (CCA-E0123); how many it renewed. */
  private async renewAfterSilence(): Promise<number> {
    const renewed = await this.q(() => leaseSql.renewAfterSilence(this.pool, this.opts.leaseSilenceMs));
    if (renewed > 0) this.opts.onDiagnostic(new CcaError('CCA-E0123', { renewed, seconds: Math.round(this.opts.leaseSilenceMs / 1000) }).diagnostic);
    return renewed;
  }

  private startReaper(): void {
    const reaper = setInterval(() => {
      if (this.reaping || this.isClosed) return;
      this.reaping = true;
      this.expireLeases()
        .catch((e) => this.opts.onDiagnostic(pgFailure(e, this.target).diagnostic))
        .finally(() => {
          this.reaping = false;
        });
    }, this.opts.leaseReaperMs);
    reaper.unref?.();
    this.shared.state.reaper = reaper;
  }

  private write<R>(item: Distribute<WriteItem>): Promise<R> {
    return new Promise<R>((resolve, reject) =>
      this.batcher.submit({ ...item, interactive: this.interactiveLane, resolve: resolve as (v: never) => void, reject } as WriteItem),
    );
  }

  private async q<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw pgFailure(e, this.target);
    }
  }

  private enter(): void {
    if (this.isClosed) throw new CcaError('CCA-E0113');
  }
}
