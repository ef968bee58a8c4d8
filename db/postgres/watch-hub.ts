import type pg from 'pg';
import { CcaError } from '../../core/diagnostics/index.js';
import type { Diagnostic } from '../../core/diagnostics/index.js';
import { intervalOf, type KeyInterval } from '../keyspace.js';
import { HeadWaiters, TouchWaiters } from '../waiters.js';
import type { WatchBatch } from '../store.js';
import type { WatchSource } from '../watch-feed.js';
import type { StoreObserver } from './observer.js';
import { createClient } from './pool.js';
import { pgFailure } from './errors.js';
import { readHead } from './sql/readHead.js';
import { readLog } from './sql/readLog.js';
import type { Db } from './sql/db.js';

export interface WatchHubOptions {
  url: string;
  target: string;
  /** Backstop poll of the head while LISTEN is down or a NOTIFY is lost. ≤ 1 s. */
  pollMs: number;
  /** Revisions kept in memory for watchers at the live edge. */
  ringRevisions: number;
  /** And their bytes (keys and values) at most: revisions carry whole specs. */
  ringBytes: number;
  /** Revisions per catch-up query. */
  pageRevisions: number;
  onDiagnostic(d: Diagnostic): void;
  /** Told of every watcher's read: its lag and whether the ring served it. */
  observer?: StoreObserver;
}

const ALL: KeyInterval = intervalOf({ prefix: '' });

/** A batch's weight in the ring: its keys and values (and previous ones) as held in memory (UTF-16, 2 bytes a unit), plus overhead. */
function batchBytes(b: WatchBatch): number {
  let n = 64;
  for (const e of b.events) n += 64 + 2 * (e.kv.key.length + e.kv.value.length + (e.prevKv ? e.prevKv.key.length + e.prevKv.value.length : 0));
  return n;
}

/**
 * One per store (so one per process): one LISTEN connection that wakes every watcher,
 * a bounded poll as the backstop, and a ring of recent revisions so that watchers at
 * the live edge share one log read. NOTIFY only says "the head moved"; the log table
 * is the source of truth, and every read from it is checked for holes.
 */
export class WatchHub implements WatchSource {
  private known = 0;
  private compactRevision = 0;
  private ring: WatchBatch[] = [];
  /** Each ring entry's size in bytes, and their sum. */
  private ringSizes: number[] = [];
  private ringTotal = 0;
  /** The ring holds revisions ringStart..ringEnd (dense: every revision has a batch). */
  private ringEnd = 0;
  private filling: Promise<void> | undefined;
  /** This process's commit in flight, planned at `before` (ownCommit). */
  private ownInFlight: { before: number; settled: Promise<void> } | undefined;
  /** headNow's read in flight on the LISTEN connection, and the one callers that came after it share. */
  private headRead: Promise<{ revision: number; compactRevision: number }> | undefined;
  private headNext: Promise<{ revision: number; compactRevision: number }> | undefined;
  private readonly waiters = new HeadWaiters();
  /** Watchers at the edge parked by interval: woken only by a batch that touches it (set at start). */
  private touching = new TouchWaiters(0);
  /** advance()'s loop is running. */
  private advancing = false;
  private listener: pg.Client | undefined;
  private poller: ReturnType<typeof setInterval> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private backoffMs = 100;
  private isClosed = false;
  private lastProblem = '';

  /**
   * `pool`: a watcher's own catch-up reads behind the ring, and the poll. `edge`: the ring's
   * one shared read at the head, which every watcher at the edge, the read mirror and through
   * it people's reads wait on — one at a time, so it may go ahead of the agents' and
   * controllers' queued reads (the store's interactive lane) without starving them.
   */
  constructor(
    private readonly pool: Db,
    private readonly opts: WatchHubOptions,
    private readonly edge: Db = pool,
  ) {}

  async start(): Promise<void> {
    const h = await readHead(this.pool);
    this.known = h.revision;
    this.ringEnd = h.revision;
    this.compactRevision = h.compactRevision;
    this.touching = new TouchWaiters(h.revision);
    await this.listen();
    this.poller = setInterval(() => void this.poll(), this.opts.pollMs);
    this.poller.unref?.();
  }

  head(): number {
    return this.known;
  }

  closed(): boolean {
    return this.isClosed;
  }

  /** A local commit or compaction: no need to wait for the NOTIFY round trip. */
  noteHead(revision: number): void {
    if (revision > this.known) {
      this.known = revision;
      this.wake();
    }
  }

  /**
   * A commit of this process's own, revisions `before` + 1 to `after`, each with its events
   * (the write batcher's: it held the counter lock or its guard found the head at `before`,
   * so nobody else wrote between). When the ring ends at `before` and no read of the log is
   * in flight, they join the ring as they are: a watcher at the edge (the read mirror among
   * them) gets them without reading back what this process just wrote.
   */
  noteCommitted(before: number, after: number, batches: readonly WatchBatch[]): void {
    if (!this.filling && this.ringEnd === before && batches.length === after - before && batches.every((b, i) => b.revision === before + 1 + i)) {
      this.push(batches, after);
    }
    this.noteHead(after);
  }

  /**
   * This process is sending a commit planned at head `before`; call the answer once its
   * outcome is known (after noteCommitted). Meanwhile a read of the revisions after `before`
   * waits for it instead of reading the log: the commit's NOTIFY can reach the LISTEN
   * connection before its result reaches the batcher, and a fill started then would read back
   * the rows the commit is about to hand over.
   */
  ownCommit(before: number): () => void {
    let settle!: () => void;
    const entry = { before, settled: new Promise<void>((r) => (settle = r)) };
    this.ownInFlight = entry;
    return () => {
      if (this.ownInFlight === entry) this.ownInFlight = undefined;
      settle();
    };
  }

  noteCompacted(revision: number): void {
    this.compactRevision = Math.max(this.compactRevision, revision);
  }

  async read(from: number, iv: KeyInterval): Promise<{ batches: WatchBatch[]; through: number }> {
    if (from < this.compactRevision) {
      throw new CcaError('CCA-E0101', { revision: from, compactRevision: this.compactRevision });
    }
    if (from > this.ringEnd + 1 && !this.filling) {
      // The ring is stale (no watcher has read for a while): restart it where this
      // watcher stands instead of paging through history nobody at the edge needs.
      this.clearRing();
      this.ringEnd = from - 1;
    }
    const own = this.ownInFlight;
    if (from > this.ringEnd && own?.before === this.ringEnd && !this.filling) await own.settled;
    if (from > this.ringEnd) {
      await this.fill();
      if (from > this.ringEnd) {
        // The fill made no progress (a hole was reported): back off instead of spinning.
        await new Promise((r) => setTimeout(r, this.opts.pollMs));
        return { batches: [], through: from - 1 };
      }
    }
    const ringStart = this.ringEnd - this.ring.length + 1;
    const hit = from >= ringStart && from <= this.ringEnd;
    this.opts.observer?.watchRead?.({ lagRevisions: Math.max(0, this.known - (from - 1)), ringHit: hit });
    if (hit) {
      return { batches: this.ring.slice(from - ringStart), through: this.ringEnd };
    }
    // Behind the ring: catch up from the log on our own, filtered to our keys.
    const page = await readLog(this.pool, from, from + this.opts.pageRevisions - 1, iv).catch((e) => {
      throw pgFailure(e, this.opts.target);
    });
    this.noteCompacted(page.compactRevision);
    if (from < page.compactRevision) {
      throw new CcaError('CCA-E0101', { revision: from, compactRevision: page.compactRevision });
    }
    return { batches: page.batches, through: page.through };
  }

  /** What the ring holds now (tests, metrics). */
  ringSize(): { revisions: number; bytes: number } {
    return { revisions: this.ring.length, bytes: this.ringTotal };
  }

  private clearRing(): void {
    this.ring = [];
    this.ringSizes = [];
    this.ringTotal = 0;
  }

  /**
   * The store's head as of now, read on the LISTEN connection: it is idle but for
   * notifications, so a person's read barrier (db/mirror.ts ConsistentReads) never waits for
   * one of the pool's connections to free. Callers that arrive while a read is in flight share
   * the next one (a read sent before they arrived may miss a commit they saw), so there is
   * never more than one in flight and one waiting. Undefined while not listening, rejected when
   * the connection fails meanwhile: then read the pool.
   */
  headNow(): Promise<{ revision: number; compactRevision: number }> | undefined {
    const client = this.listener;
    if (!client || this.isClosed) return undefined;
    if (!this.headRead) return (this.headRead = this.readHeadOn(client));
    this.headNext ??= this.headRead
      .catch(() => undefined)
      .then(() => {
        this.headNext = undefined;
        const now = this.listener;
        // Not a user's error: the one caller (PostgresStore.revision) reads the pool instead.
        if (!now || this.isClosed) throw new Error('the watch connection closed while a head read waited');
        return (this.headRead = this.readHeadOn(now));
      });
    return this.headNext;
  }

  private readHeadOn(client: pg.Client): Promise<{ revision: number; compactRevision: number }> {
    const read: Promise<{ revision: number; compactRevision: number }> = readHead(client).then(
      (h) => {
        if (this.headRead === read) this.headRead = undefined;
        this.noteCompacted(h.compactRevision);
        this.noteHead(h.revision);
        return h;
      },
      (e: unknown) => {
        if (this.headRead === read) this.headRead = undefined;
        throw pgFailure(e, this.opts.target);
      },
    );
    return read;
  }

  waitBeyond(rev: number, signal: AbortSignal): Promise<void> {
    return this.waiters.wait(() => this.known > rev || this.isClosed, signal);
  }

  /**
   * Parked until a batch at or after `from` touches `iv`: every batch reaches the ring through
   * `push`, which shows it to the parked watchers, and while any is parked the hub extends the
   * ring itself as the head moves (`advance`) — one shared read, as when every watcher woke
   * and read (docs/benchmarks.md, Cost item 6).
   */
  waitTouching(iv: KeyInterval, from: number, signal: AbortSignal): Promise<number> {
    if (this.isClosed) return Promise.resolve(from);
    const parked = this.touching.wait(iv, from, signal);
    if (this.known > this.ringEnd) void this.advance();
    return parked;
  }

  async close(): Promise<void> {
    this.isClosed = true;
    if (this.poller) clearInterval(this.poller);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.wake();
    this.touching.releaseAll();
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
  }

  /** Extend the ring to the known head with one unfiltered read; concurrent callers share it. */
  private fill(): Promise<void> {
    this.filling ??= this.doFill().finally(() => {
      this.filling = undefined;
    });
    return this.filling;
  }

  private async doFill(): Promise<void> {
    if (this.known <= this.ringEnd) return;
    const from = this.ringEnd + 1;
    const page = await readLog(this.edge, from, from + this.opts.pageRevisions - 1, ALL).catch((e) => {
      throw pgFailure(e, this.opts.target);
    });
    this.noteCompacted(page.compactRevision);
    if (from < page.compactRevision) {
      // We fell behind compaction: restart the ring at the head; stragglers get `compacted`.
      this.clearRing();
      this.ringEnd = page.head;
      this.touching.releaseAll();
      return;
    }
    let expect = from;
    for (const b of page.batches) {
      if (b.revision !== expect) {
        this.report(new CcaError('CCA-E0115', { from, to: page.through, missing: expect }).diagnostic);
        return;
      }
      expect++;
    }
    if (expect !== page.through + 1) {
      this.report(new CcaError('CCA-E0115', { from, to: page.through, missing: expect }).diagnostic);
      return;
    }
    this.push(page.batches, page.through);
    this.noteHead(page.head);
  }

  /** Dense batches through `through` onto the ring's end, then the oldest out: by count and by bytes; the newest always stays. */
  private push(batches: readonly WatchBatch[], through: number): void {
    for (const b of batches) {
      const size = batchBytes(b);
      this.ring.push(b);
      this.ringSizes.push(size);
      this.ringTotal += size;
    }
    this.ringEnd = through;
    this.touching.passed(batches, through);
    let drop = Math.max(0, this.ring.length - this.opts.ringRevisions);
    let total = this.ringTotal;
    for (let i = 0; i < drop; i++) total -= this.ringSizes[i]!;
    while (total > this.opts.ringBytes && drop < this.ring.length - 1) total -= this.ringSizes[drop++]!;
    if (drop > 0) {
      this.ring.splice(0, drop);
      this.ringSizes.splice(0, drop);
      this.ringTotal = total;
    }
  }

  private async listen(): Promise<void> {
    const client = createClient(this.opts.url);
    client.on('notification', (msg) => {
      const rev = Number(msg.payload);
      if (Number.isSafeInteger(rev)) this.noteHead(rev);
    });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query('LISTEN cca_revision');
      this.listener = client;
      this.backoffMs = 100;
      this.lastProblem = '';
      // Anything committed while we were not listening is picked up now.
      void this.poll();
    } catch (e) {
      client.end().catch(() => undefined);
      this.report(pgFailure(e, this.opts.target).diagnostic);
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.isClosed || this.reconnectTimer) return;
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 5_000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.isClosed) void this.listen();
    }, wait);
    this.reconnectTimer.unref?.();
  }

  private async poll(): Promise<void> {
    if (this.isClosed) return;
    try {
      const h = await readHead(this.pool);
      this.noteCompacted(h.compactRevision);
      this.noteHead(h.revision);
    } catch (e) {
      this.report(pgFailure(e, this.opts.target).diagnostic);
    }
  }

  /** A failing store is reported once, not once per poll. */
  private report(d: Diagnostic): void {
    const key = `${d.code} ${d.message}`;
    if (key === this.lastProblem) return;
    this.lastProblem = key;
    this.opts.onDiagnostic(d);
  }

  private wake(): void {
    this.waiters.wake();
    if (this.touching.size() > 0 && this.known > this.ringEnd) void this.advance();
  }

  /**
   * Extend the ring to the head for the watchers parked by interval (they do not read until a
   * batch touches them). A failed or stuck read releases them all to read for themselves:
   * their own reads report, back off and retry as before.
   */
  private async advance(): Promise<void> {
    if (this.advancing) return;
    this.advancing = true;
    try {
      while (!this.isClosed && this.touching.size() > 0 && this.known > this.ringEnd) {
        // Far behind (nobody read for a while): start the ring where the parked watchers stand
        // instead of paging through what none of them needs (read() does the same).
        const lowest = this.known - this.ringEnd > this.opts.pageRevisions && !this.filling ? this.touching.lowestNext() : undefined;
        if (lowest !== undefined && lowest > this.ringEnd + 1) {
          this.clearRing();
          this.ringEnd = lowest - 1;
          continue;
        }
        const own = this.ownInFlight;
        if (own?.before === this.ringEnd && !this.filling) {
          await own.settled;
          continue;
        }
        const before = this.ringEnd;
        try {
          await this.fill();
        } catch {
          this.touching.releaseAll();
          return;
        }
        if (this.ringEnd === before) {
          this.touching.releaseAll();
          return;
        }
      }
    } finally {
      this.advancing = false;
    }
  }
}
