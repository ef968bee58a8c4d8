import { createRequire } from 'node:module';
import { CcaError, isCcaError, makeDiagnostic, messageOf, type Diagnostic } from '../core/diagnostics/index.js';
import { checkRangeOptions, compareKeys, intervalOf, shapeRange, type KeyInterval } from './keyspace.js';
import { HeadWaiters } from './waiters.js';
import { outageBackoffMs, sleep } from './watch-feed.js';
import type { KeyValue, LeaseTtl, RangeRequest, RangeResponse, Store, TxnRequest, TxnResponse, WatchBatch, WatchRequest } from './store.js';

// sorted-btree is CommonJS with its class on `default`, which an ESM default import resolves
// differently under Node and under Vite: required, it is the same everywhere.
type BTreeClass = typeof import('sorted-btree').default;
const BTree = (createRequire(import.meta.url)('sorted-btree') as { default: BTreeClass }).default;
type Tree = InstanceType<typeof BTree<string, KeyValue>>;

/**
 * The bound on what a mirror holds (keys and values as UTF-16, plus a per-key overhead):
 * 3.5 MB at 1,000 replicas on 100 nodes, so ~35 MiB at 10,000 (docs/benchmarks.md). Past it the mirror turns itself off
 * (CCA-E0129) and steps read the store directly, as without one.
 */
export const MIRROR_DEFAULT_MAX_BYTES = 512 * 2 ** 20;
/** How long a read waits for the mirror to reach the revision it must see before reading the store instead. */
export const MIRROR_CATCH_UP_MS = 2_000;
/** Keys per page of the initial listing. */
const LIST_PAGE = 2_000;
const KEY_OVERHEAD = 96;

export interface MirrorOptions {
  /** The key prefixes mirrored: ranges inside one of them are served from memory. */
  prefixes: readonly string[];
  maxBytes?: number;
  catchUpMs?: number;
  /** The mirror turned itself off (CCA-E0129), or its feed failed other than by the store being down. */
  onDiagnostic?: (d: Diagnostic) => void;
  /** Told of every read a view served: from the mirror, or from the store (and why). */
  onRead?: (way: MirrorReadWay) => void;
}

export type MirrorReadWay = 'mirror' | 'store-uncovered' | 'store-not-ready' | 'store-behind' | 'store-revision';

/** The mirror's state at one revision; never changes (a copy-on-write clone of the live tree). */
export interface MirrorSnapshot {
  readonly revision: number;
  readonly tree: Tree;
}

type State = 'loading' | 'live' | 'off' | 'closed';

/**
 * An in-memory copy of the keys under some prefixes, kept by one watch of the whole store
 * (list at a revision, then every batch after it, in order and gap-free): what Kubernetes
 * calls an informer's cache. Controller steps read their prefixes here instead of asking
 * the store for thousands of keys per step; their txns still go to the store and compare
 * what they read, so a read a little behind the head can only make a txn fail, never lie
 * (DESIGN rule 2). `MirroredReads` makes each step read at or after the store's head when
 * it began and after its own writes, so no wakeup is lost.
 */
export class StoreMirror {
  private live: Tree = new BTree(undefined, compareKeys);
  private revision = 0;
  private bytes = 0;
  private state: State = 'loading';
  private last: MirrorSnapshot | undefined;
  private readonly waiters = new HeadWaiters();
  private readonly abort = new AbortController();
  private readonly intervals: KeyInterval[];
  private readonly maxBytes: number;
  private readonly catchUpMs: number;
  private following: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly opts: MirrorOptions,
  ) {
    this.intervals = opts.prefixes.map((prefix) => intervalOf({ prefix }));
    this.maxBytes = opts.maxBytes ?? MIRROR_DEFAULT_MAX_BYTES;
    this.catchUpMs = opts.catchUpMs ?? MIRROR_CATCH_UP_MS;
  }

  /** Lists, then follows the store until close(); failures are retried (a relist), never thrown. */
  start(): this {
    this.following ??= this.follow();
    return this;
  }

  async close(): Promise<void> {
    this.state = 'closed';
    this.abort.abort();
    this.waiters.wake();
    await this.following;
  }

  /** Is every key of the interval under one mirrored prefix? */
  covers(iv: KeyInterval): boolean {
    return this.intervals.some((m) => compareKeys(iv.start, m.start) >= 0 && (m.end === undefined || (iv.single ? compareKeys(iv.start, m.end) < 0 : iv.end !== undefined && compareKeys(iv.end, m.end) <= 0)));
  }

  coversKey(key: string): boolean {
    return this.intervals.some((m) => compareKeys(key, m.start) >= 0 && (m.end === undefined || compareKeys(key, m.end) < 0));
  }

  status(): { state: State; revision: number; keys: number; bytes: number } {
    return { state: this.state, revision: this.revision, keys: this.live.size, bytes: this.bytes };
  }

  /**
   * The mirror at a revision ≥ floor: at once if it is there, else once it gets there within
   * catchUpMs. Undefined (read the store) at once while it loads (a large cluster's listing
   * takes seconds: a pod's first requests should not wait for it) or when it is off, and
   * when it stays behind.
   */
  async at(floor: number): Promise<{ snapshot?: MirrorSnapshot; why?: MirrorReadWay }> {
    if (this.state !== 'live') return { why: 'store-not-ready' };
    if (this.revision >= floor) return { snapshot: this.snapshot() };
    // Woken at every batch the mirror applies and at any change of its state: each wait re-checks.
    const reached = () => this.revision >= floor || this.state !== 'live';
    const timeout = AbortSignal.timeout(this.catchUpMs);
    while (!reached() && !timeout.aborted) await this.waiters.wait(reached, timeout);
    if (this.state !== 'live') return { why: 'store-not-ready' };
    return this.revision >= floor ? { snapshot: this.snapshot() } : { why: 'store-behind' };
  }

  private snapshot(): MirrorSnapshot {
    if (this.last?.revision !== this.revision) this.last = { revision: this.revision, tree: this.live.clone() };
    return this.last;
  }

  /** Loading or live (not off, not closed): a method, so the compiler re-reads the state after each await. */
  private isFollowing(): boolean {
    return this.state === 'loading' || this.state === 'live';
  }

  private async follow(): Promise<void> {
    let failures = 0;
    while (this.isFollowing()) {
      try {
        const from = await this.load();
        if (!this.isFollowing()) break; // closed while it listed
        this.state = 'live';
        failures = 0;
        this.waiters.wake();
        for await (const batch of this.store.watch({ prefix: '', fromRevision: from + 1, signal: this.abort.signal })) {
          this.apply(batch);
          if (this.state !== 'live') break;
          this.waiters.wake();
        }
      } catch (e) {
        if (!this.isFollowing()) break;
        // Compacted past us (CCA-E0101) or the store down: list again. A bug is said once per failure run.
        if (!isCcaError(e) || (e.blame !== 'environment' && e.code !== 'CCA-E0101')) {
          if (failures === 0) this.opts.onDiagnostic?.(makeDiagnostic('CCA-E0130', { reason: isCcaError(e) ? `${e.code} ${e.diagnostic.message}` : messageOf(e) }));
        }
        this.state = 'loading';
        this.waiters.wake();
        await sleep(outageBackoffMs(++failures), this.abort.signal);
      }
      if (this.abort.signal.aborted) break;
    }
    this.waiters.wake();
  }

  /** Every mirrored key at one revision, into a fresh tree; answers that revision. */
  private async load(): Promise<number> {
    const tree: Tree = new BTree(undefined, compareKeys);
    let bytes = 0;
    let at = 0;
    for (const iv of this.intervals) {
      let page: RangeRequest = { prefix: iv.start };
      for (;;) {
        const r = await this.store.range({ ...page, limit: LIST_PAGE, ...(at ? { revision: at } : {}) });
        if (!at) at = r.revision;
        for (const kv of r.kvs) {
          tree.set(kv.key, own(kv));
          bytes += weight(kv);
        }
        if (bytes > this.maxBytes) this.turnOff(bytes);
        if (this.state === 'off') throw new CcaError('CCA-E0129', { bytes, max: this.maxBytes });
        if (!r.more || r.kvs.length === 0) break;
        page = { start: r.kvs[r.kvs.length - 1]!.key + '\u0001', ...(iv.end !== undefined ? { end: iv.end } : {}) };
      }
    }
    if (!at) at = await this.store.revision();
    this.live = tree;
    this.bytes = bytes;
    this.revision = at;
    this.last = undefined;
    return at;
  }

  private apply(batch: WatchBatch): void {
    for (const e of batch.events) {
      if (!this.coversKey(e.kv.key)) continue;
      const before = this.live.get(e.kv.key);
      if (before) this.bytes -= weight(before);
      if (e.type === 'put') {
        this.live.set(e.kv.key, own(e.kv));
        this.bytes += weight(e.kv);
      } else {
        this.live.delete(e.kv.key);
      }
    }
    this.revision = batch.revision;
    if (this.bytes > this.maxBytes) this.turnOff(this.bytes);
  }

  private turnOff(bytes: number): void {
    if (this.state === 'off') return;
    this.state = 'off';
    this.live = new BTree(undefined, compareKeys);
    this.last = undefined;
    this.bytes = 0;
    this.abort.abort();
    this.opts.onDiagnostic?.(makeDiagnostic('CCA-E0129', { bytes, max: this.maxBytes }));
    this.waiters.wake();
  }

  /**
   * A step's view of the store (see MirroredReads). `floor`: the revision its reads must
   * reach, when the caller knows it; else the store's head at its first read (a round trip).
   */
  reads(store: Store, floor?: number): MirroredReads {
    return new MirroredReads(store, this, floor);
  }

  /** People's reads of `store` (see ConsistentReads): one long-lived view. */
  consistent(store: Store): ConsistentReads {
    return new ConsistentReads(store, this);
  }

  report(way: MirrorReadWay): void {
    this.opts.onRead?.(way);
  }
}

/**
 * The mirror's own copy of a key-value, frozen: every read hands out the same object while
 * the key is unchanged, so its decoded value is remembered by the object (jobs/decode-memo.ts).
 */
function own(kv: KeyValue): KeyValue {
  return Object.freeze({ ...kv });
}

function weight(kv: KeyValue): number {
  return KEY_OVERHEAD + 2 * (kv.key.length + kv.value.length);
}

/** The keys of a snapshot in [iv.start, iv.end), in key order. */
function collect(tree: Tree, iv: KeyInterval): KeyValue[] {
  if (iv.single) {
    const kv = tree.get(iv.start);
    return kv ? [kv] : [];
  }
  const out: KeyValue[] = [];
  const high = iv.end ?? tree.maxKey();
  if (high === undefined) return out;
  tree.forRange(iv.start, high, iv.end === undefined, (_k: string, v: KeyValue) => {
    out.push(v);
  });
  return out;
}

/**
 * Reads of mirrored prefixes served from the mirror, everything else (writes, leases,
 * watches, other reads) from the store. A subclass says which snapshot a read at the head
 * takes and which a read at an explicit revision may use; a read the mirror cannot serve
 * (loading, off, behind, an unknown revision) goes to the store: slower, never wrong.
 */
abstract class MirrorView implements Store {
  constructor(
    protected readonly store: Store,
    protected readonly mirror: StoreMirror,
  ) {}

  /** The snapshot a read at the head takes, or why the store answers instead. */
  protected abstract atHead(): Promise<{ snapshot?: MirrorSnapshot; why?: MirrorReadWay }>;
  /** A snapshot this view took at exactly `revision`, if it still has it. */
  protected abstract atRevision(revision: number): MirrorSnapshot | undefined;
  /** The store answered at, or committed at, this revision. */
  protected saw(_revision: number): void {}

  private async snapshotFor(iv: KeyInterval, revision: number): Promise<MirrorSnapshot | undefined> {
    if (!this.mirror.covers(iv)) {
      this.mirror.report('store-uncovered');
      return undefined;
    }
    if (revision !== 0) {
      const s = this.atRevision(revision);
      this.mirror.report(s ? 'mirror' : 'store-revision');
      return s;
    }
    const got = await this.atHead();
    this.mirror.report(got.snapshot ? 'mirror' : got.why!);
    return got.snapshot;
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    const iv = intervalOf(req);
    checkRangeOptions(req);
    const s = await this.snapshotFor(iv, req.revision ?? 0);
    if (!s) {
      const r = await this.store.range(req);
      this.saw(r.revision);
      return r;
    }
    return { ...shapeRange(collect(s.tree, iv), req), revision: s.revision };
  }

  async get(key: string, opts: { revision?: number } = {}): Promise<KeyValue | null> {
    const s = await this.snapshotFor(intervalOf({ key }), opts.revision ?? 0);
    if (!s) return this.store.get(key, opts);
    return s.tree.get(key) ?? null;
  }

  async getMany(keys: readonly string[]): Promise<(KeyValue | null)[]> {
    if (keys.length === 0) return [];
    if (keys.every((k) => this.mirror.coversKey(k))) {
      const got = await this.atHead();
      this.mirror.report(got.snapshot ? 'mirror' : got.why!);
      if (got.snapshot) return keys.map((k) => got.snapshot!.tree.get(k) ?? null);
    } else {
      this.mirror.report('store-uncovered');
    }
    return this.store.getMany(keys);
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    const r = await this.store.txn(req);
    this.saw(r.revision);
    return r;
  }

  async put(key: string, value: string, opts?: { lease?: number; prevKv?: boolean }): Promise<{ revision: number; prevKv?: KeyValue }> {
    const r = await this.store.put(key, value, opts);
    this.saw(r.revision);
    return r;
  }

  async delete(key: string, opts?: { prefix?: boolean; prevKv?: boolean }): Promise<{ revision: number; deleted: number; prevKvs?: KeyValue[] }> {
    const r = await this.store.delete(key, opts);
    this.saw(r.revision);
    return r;
  }

  revision(): Promise<number> {
    return this.store.revision();
  }

  watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    return this.store.watch(req);
  }

  grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    return this.store.grantLease(ttlSeconds);
  }

  keepAlive(id: number): Promise<{ ttl: number }> {
    return this.store.keepAlive(id);
  }

  revokeLease(id: number): Promise<{ revision: number }> {
    return this.store.revokeLease(id);
  }

  leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }> {
    return this.store.leaseTimeToLive(id);
  }

  leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]> {
    return this.store.leasesTimeToLive(ids);
  }

  leases(): Promise<{ id: number }[]> {
    return this.store.leases();
  }

  compact(revision: number): Promise<void> {
    return this.store.compact(revision);
  }

  /** A view owns nothing: the store is closed by whoever opened it. */
  async close(): Promise<void> {}
}

/**
 * One controller step's (or one request's) view of the store:
 * - The first mirrored read waits until the mirror holds `floor`, or the store's head as it
 *   was then, so a step woken by a commit reads that commit (a wakeup is never lost to a
 *   lagging copy).
 * - Every later read is at or after the last one and after the view's own writes.
 * - A read at an explicit revision is served from a snapshot this view read at it (a paged
 *   read continuing), else from the store.
 */
export class MirroredReads extends MirrorView {
  private floor: number | undefined;
  /** The head read that sets `floor`: reads started together (a step's Promise.all) share it. */
  private floorRead: Promise<number> | undefined;
  /** The newest revision the store answered or committed at for this view, floor or not. */
  private seen = 0;
  private readonly snapshots = new Map<number, MirrorSnapshot>();

  constructor(store: Store, mirror: StoreMirror, floor?: number) {
    super(store, mirror);
    this.floor = floor;
  }

  protected override saw(revision: number): void {
    if (revision > this.seen) this.seen = revision;
    if (this.floor !== undefined && revision > this.floor) this.floor = revision;
  }

  protected async atHead(): Promise<{ snapshot?: MirrorSnapshot; why?: MirrorReadWay }> {
    if (this.floor === undefined) {
      this.floorRead ??= this.store.revision();
      const head = await this.floorRead;
      // A write of this view that committed while the head was read is not lost from sight.
      this.floor = Math.max(this.floor ?? 0, head, this.seen);
    }
    const got = await this.mirror.at(this.floor);
    if (got.snapshot) {
      this.snapshots.set(got.snapshot.revision, got.snapshot);
      this.saw(got.snapshot.revision);
    }
    return got;
  }

  protected atRevision(revision: number): MirrorSnapshot | undefined {
    return this.snapshots.get(revision);
  }
}

/** Snapshots a ConsistentReads keeps for reads at a revision it answered at (a status view's other kinds, later pages). */
const RECENT_SNAPSHOTS = 8;

/**
 * A long-lived view for people's reads (the API): each read at the head waits until the
 * mirror holds the store's head as of that call — one small round trip for the revision,
 * instead of the rows — so it is as linearizable as a read from the store; a read at a
 * revision it recently answered at is served from that snapshot.
 */
export class ConsistentReads extends MirrorView {
  private readonly recent = new Map<number, MirrorSnapshot>();

  protected async atHead(): Promise<{ snapshot?: MirrorSnapshot; why?: MirrorReadWay }> {
    const got = await this.mirror.at(await this.store.revision());
    const s = got.snapshot;
    if (s && !this.recent.has(s.revision)) {
      this.recent.set(s.revision, s);
      if (this.recent.size > RECENT_SNAPSHOTS) this.recent.delete(this.recent.keys().next().value!);
    }
    return got;
  }

  protected atRevision(revision: number): MirrorSnapshot | undefined {
    return this.recent.get(revision);
  }
}
