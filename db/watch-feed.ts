import { isCcaError } from '../core/diagnostics/index.js';
import { inInterval, watchInterval, type KeyInterval } from './keyspace.js';
import type { WatchBatch, WatchRequest } from './store.js';

/**
 * Where a watcher pulls its history from. Pull, not push: each watcher keeps its own
 * position, so a slow or late watcher catches up from the log by itself and can never
 * block writers or other watchers (etcd's synced / unsynced / victim split, for free).
 */
export interface WatchSource {
  /** The newest committed revision this source knows about. */
  head(): number;
  /**
   * The batches touching `iv` with from ≤ revision ≤ through, in order, each complete.
   * `through` may stop short of head (paging). Throws CCA-E0101 when `from` is compacted.
   */
  read(from: number, iv: KeyInterval): Promise<{ batches: WatchBatch[]; through: number }>;
  /** Resolves once head() > rev, or when the signal aborts or the source closes. */
  waitBeyond(rev: number, signal: AbortSignal): Promise<void>;
  /**
   * A watcher of `iv` that has read everything before `from`, parked until a revision at or
   * after `from` touches `iv`: resolves with the revision to read from next (every revision
   * before it that it skips touched nothing of `iv`), or `from` when the source cannot tell.
   * Optional: a source without it wakes every watcher at every head move (`waitBeyond`).
   */
  waitTouching?(iv: KeyInterval, from: number, signal: AbortSignal): Promise<number>;
  closed(): boolean;
}

/**
 * Validation and the start revision are settled at call time, not at the first
 * next(), so "watch, then write, then iterate" never misses the write.
 */
export function followWatch(source: WatchSource, req: WatchRequest): AsyncGenerator<WatchBatch> {
  const iv = watchInterval(req);
  const start = req.fromRevision ? req.fromRevision : source.head() + 1;
  return pull(source, req, iv, start);
}

async function* pull(source: WatchSource, req: WatchRequest, iv: KeyInterval, start: number): AsyncGenerator<WatchBatch> {
  // One listener on the caller's signal per watch, however many times we wait: many
  // watches may share one signal. One generator, and a plain flag for "stopped": a watch
  // steps once per revision it follows, and each layer or signal check is paid that often.
  const own = new AbortController();
  let stopped = false;
  const stop = () => {
    stopped = true;
    own.abort();
  };
  req.signal?.addEventListener('abort', stop, { once: true });
  if (req.signal?.aborted) stop();
  const signal = own.signal;
  const view = `${iv.single ? 1 : 0}\u0000${iv.start}\u0000${iv.end ?? ''}\u0000${req.prevKv ? 1 : 0}`;
  const prevKv = req.prevKv === true;
  try {
    let next = start;
    let failures = 0;
    while (!stopped && !source.closed()) {
      if (next > source.head()) {
        if (source.waitTouching) next = await source.waitTouching(iv, next, signal);
        else await source.waitBeyond(next - 1, signal);
        continue;
      }
      let page: { batches: WatchBatch[]; through: number };
      try {
        page = await source.read(next, iv);
        failures = 0;
      } catch (e) {
        // The store being briefly unreachable is not the watcher's problem: keep our
        // position and try again, so nothing is lost or doubled. Compaction and bugs end it.
        if (!isCcaError(e) || e.blame !== 'environment') throw e;
        await sleep(outageBackoffMs(++failures), signal);
        continue;
      }
      const { batches, through } = page;
      for (const b of batches) {
        if (stopped) return;
        const shaped = shapeFor(b, iv, view, prevKv);
        if (shaped) yield shaped;
      }
      next = through + 1;
    }
  } finally {
    req.signal?.removeEventListener('abort', stop);
  }
}

/**
 * A batch as the watchers of one interval see it (their keys only, prevKv only if asked),
 * made once per batch and view and shared by every such watcher: a source hands the same
 * batch objects to all of them (the ring), and a thousand watchers of one prefix made a
 * thousand copies of each batch. Shared, so a consumer must not modify what it is given.
 * Bounded: the views of the newest `MEMO_BATCHES` batches are kept, `MEMO_VIEWS` per batch
 * (watchers at the head all read the newest; one catching up from far behind shapes its own).
 */
const MEMO_BATCHES = 64;
const MEMO_VIEWS = 16;
const views = new WeakMap<WatchBatch, Map<string, WatchBatch | null>>();
const memoised: WatchBatch[] = [];

function shapeFor(b: WatchBatch, iv: KeyInterval, view: string, prevKv: boolean): WatchBatch | undefined {
  let byView = views.get(b);
  const known = byView?.get(view);
  if (known !== undefined) return known ?? undefined;
  const events = b.events.filter((e) => inInterval(e.kv.key, iv));
  const shaped = events.length === 0 ? null : { revision: b.revision, events: prevKv ? events : events.map(({ type, kv }) => ({ type, kv })) };
  if (!byView) {
    views.set(b, (byView = new Map()));
    memoised.push(b);
    if (memoised.length > MEMO_BATCHES) views.delete(memoised.shift()!);
  }
  if (byView.size < MEMO_VIEWS) byView.set(view, shaped);
  return shaped ?? undefined;
}

/** How long a watch waits before asking an unreachable store again: 100 ms doubling to 2 s. */
export function outageBackoffMs(failures: number): number {
  return Math.min(50 * 2 ** failures, 2_000);
}

/**
 * `ask()`'s answer, asked again through a store outage (an error the environment is blamed
 * for) as a watch waits one out; any other error, or the signal aborting, ends it.
 */
export async function askThroughOutage<T>(ask: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (let failures = 0; ; ) {
    try {
      return await ask();
    } catch (e) {
      if (!isCcaError(e) || e.blame !== 'environment' || signal.aborted) throw e;
      await sleep(outageBackoffMs(++failures), signal);
    }
  }
}

/** Resolves after `ms`, or at once when the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
