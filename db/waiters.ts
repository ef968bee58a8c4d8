import { inInterval, prefixEnd, type KeyInterval } from './keyspace.js';
import type { WatchBatch } from './store.js';

/**
 * Watchers parked until the head moves. A store calls `wake()` whenever its head
 * advances (or it closes); each waiter re-checks its own condition.
 *
 * A watch waits once per revision it follows, so a thousand watchers at 100 revisions a
 * second wait 100,000 times a second: each signal gets one abort listener for its whole
 * life (not one added and removed per wait — EventTarget's bookkeeping was a measurable
 * part of the pod's cost per event), which ends whatever wait is current.
 */
export class HeadWaiters {
  private waiters = new Set<() => void>();
  private readonly parked = new WeakMap<AbortSignal, { current?: () => void }>();

  /** Resolves once `ready()` holds at a wake, or the signal aborts. */
  wait(ready: () => boolean, signal: AbortSignal): Promise<void> {
    if (ready() || signal.aborted) return Promise.resolve();
    const slot = this.slotOf(signal);
    return new Promise<void>((resolve) => {
      slot.current = resolve;
      this.waiters.add(resolve);
    });
  }

  wake(): void {
    const ws = this.waiters;
    this.waiters = new Set();
    for (const w of ws) w();
  }

  private slotOf(signal: AbortSignal): { current?: () => void } {
    let slot = this.parked.get(signal);
    if (!slot) {
      const s: { current?: () => void } = {};
      signal.addEventListener(
        'abort',
        () => {
          const w = s.current;
          if (!w) return;
          s.current = undefined;
          this.waiters.delete(w);
          w();
        },
        { once: true },
      );
      this.parked.set(signal, s);
      slot = s;
    }
    return slot;
  }
}

interface TouchWaiter {
  iv: KeyInterval;
  /** The first revision it waits for (it has read everything before). */
  from: number;
  resolve(next: number): void;
  /** Where it is indexed: a prefix, a key, or neither (a general range). */
  prefix?: string;
}

/**
 * Watchers at the live edge parked by their key interval. The source passes each batch it
 * learns of (dense, in order) through `passed`, which wakes only the watchers a batch touches,
 * each told the first revision that does, and moves every other one past the batches it has
 * now been shown — so an agent's long poll of its own prefix sleeps through the commits of
 * every other node instead of waking, reading and filtering each (docs/benchmarks.md, Cost
 * item 6). Anything the source cannot pass in order (a hole, a restart after compaction, a
 * failed read) calls `releaseAll`, and the watchers read for themselves as before.
 *
 * Indexed so a batch costs its events × the distinct prefix lengths, not × the watchers:
 * prefix intervals (nearly all: an agent's prefixes, the mirror's '') by their prefix, single
 * keys by key, and the rare general range checked one by one.
 */
export class TouchWaiters {
  private readonly byPrefix = new Map<string, Set<TouchWaiter>>();
  /** How many indexed prefixes have each length (a key is looked up at each). */
  private readonly prefixLengths = new Map<number, number>();
  private readonly byKey = new Map<string, Set<TouchWaiter>>();
  private readonly ranges = new Set<TouchWaiter>();
  private count = 0;
  private readonly parked = new WeakMap<AbortSignal, { current?: TouchWaiter }>();

  /** `shownThrough`: the last revision the source has already passed, or will not (where it starts). */
  constructor(private shownThrough: number) {}

  size(): number {
    return this.count;
  }

  /**
   * Resolves with the revision to read from next: the first passed batch at or after `from`
   * that touches `iv` — or, released or aborted, the first revision it has not been shown.
   */
  wait(iv: KeyInterval, from: number, signal: AbortSignal): Promise<number> {
    // Revisions already passed were not checked against this watcher: it reads them itself.
    if (signal.aborted || from <= this.shownThrough) return Promise.resolve(from);
    const slot = this.slotOf(signal);
    return new Promise<number>((resolve) => {
      const w: TouchWaiter = { iv, from, resolve };
      slot.current = w;
      this.add(w);
    });
  }

  /**
   * Batches `batches[0].revision` … `through`, every revision present, in order. A watcher
   * that was not shown the revisions before the first (the source skipped some: a restarted
   * ring) is released to read them for itself.
   */
  passed(batches: readonly WatchBatch[], through: number): void {
    const first = batches.length > 0 ? batches[0]!.revision : through + 1;
    if (this.count > 0 && first > this.shownThrough + 1) {
      for (const w of this.all()) {
        const next = this.nextFor(w);
        if (next < first) this.release(w, next);
      }
    }
    this.shownThrough = Math.max(this.shownThrough, through);
    if (this.count === 0) return;
    for (const b of batches) {
      for (const e of b.events) {
        this.touch(e.kv.key, b.revision);
        if (this.count === 0) return;
      }
    }
  }

  /** Every parked watcher reads for itself, from the first revision it has not been shown. */
  releaseAll(): void {
    for (const w of this.all()) this.release(w, this.nextFor(w));
  }

  /** The smallest revision a parked watcher has not been shown (undefined when none is parked). */
  lowestNext(): number | undefined {
    let low: number | undefined;
    for (const w of this.all()) {
      const n = this.nextFor(w);
      if (low === undefined || n < low) low = n;
    }
    return low;
  }

  /** Past `shownThrough` for a watcher parked at or before it: every batch since was passed and did not touch it. */
  private nextFor(w: TouchWaiter): number {
    return Math.max(w.from, this.shownThrough + 1);
  }

  private touch(key: string, revision: number): void {
    for (const len of this.prefixLengths.keys()) {
      if (len > key.length) continue;
      const ws = this.byPrefix.get(len === key.length ? key : key.slice(0, len));
      if (ws) for (const w of ws) if (w.from <= revision) this.release(w, revision);
    }
    const exact = this.byKey.get(key);
    if (exact) for (const w of exact) if (w.from <= revision) this.release(w, revision);
    for (const w of this.ranges) if (w.from <= revision && inInterval(key, w.iv)) this.release(w, revision);
  }

  private *all(): Generator<TouchWaiter> {
    for (const ws of [...this.byPrefix.values(), ...this.byKey.values()]) yield* [...ws];
    yield* [...this.ranges];
  }

  private add(w: TouchWaiter): void {
    this.count++;
    const { iv } = w;
    if (iv.single) {
      let ws = this.byKey.get(iv.start);
      if (!ws) this.byKey.set(iv.start, (ws = new Set()));
      ws.add(w);
    } else if (iv.end === prefixEnd(iv.start)) {
      w.prefix = iv.start;
      let ws = this.byPrefix.get(iv.start);
      if (!ws) {
        this.byPrefix.set(iv.start, (ws = new Set()));
        this.prefixLengths.set(iv.start.length, (this.prefixLengths.get(iv.start.length) ?? 0) + 1);
      }
      ws.add(w);
    } else {
      this.ranges.add(w);
    }
  }

  private release(w: TouchWaiter, next: number): void {
    if (!this.remove(w)) return;
    w.resolve(next);
  }

  /** False when it was no longer parked. */
  private remove(w: TouchWaiter): boolean {
    let gone: boolean;
    if (w.prefix !== undefined) {
      const ws = this.byPrefix.get(w.prefix);
      gone = ws?.delete(w) ?? false;
      if (ws && ws.size === 0) {
        this.byPrefix.delete(w.prefix);
        const n = this.prefixLengths.get(w.prefix.length)! - 1;
        if (n === 0) this.prefixLengths.delete(w.prefix.length);
        else this.prefixLengths.set(w.prefix.length, n);
      }
    } else if (w.iv.single) {
      const ws = this.byKey.get(w.iv.start);
      gone = ws?.delete(w) ?? false;
      if (ws && ws.size === 0) this.byKey.delete(w.iv.start);
    } else {
      gone = this.ranges.delete(w);
    }
    if (gone) this.count--;
    return gone;
  }

  private slotOf(signal: AbortSignal): { current?: TouchWaiter } {
    let slot = this.parked.get(signal);
    if (!slot) {
      const s: { current?: TouchWaiter } = {};
      signal.addEventListener(
        'abort',
        () => {
          const w = s.current;
          s.current = undefined;
          if (w) this.release(w, this.nextFor(w));
        },
        { once: true },
      );
      this.parked.set(signal, s);
      slot = s;
    }
    return slot;
  }
}
