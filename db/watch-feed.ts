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
  // watches may share one signal.
  const own = new AbortController();
  const stop = () => own.abort();
  req.signal?.addEventListener('abort', stop, { once: true });
  if (req.signal?.aborted) own.abort();
  const signal = own.signal;
  try {
    yield* pullFrom(source, req, iv, start, signal);
  } finally {
    req.signal?.removeEventListener('abort', stop);
  }
}

async function* pullFrom(
  source: WatchSource,
  req: WatchRequest,
  iv: KeyInterval,
  start: number,
  signal: AbortSignal,
): AsyncGenerator<WatchBatch> {
  let next = start;
  let failures = 0;
  while (!signal.aborted && !source.closed()) {
    if (next > source.head()) {
      await source.waitBeyond(next - 1, signal);
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
      failures++;
      await sleep(Math.min(50 * 2 ** failures, 2_000), signal);
      continue;
    }
    const { batches, through } = page;
    for (const b of batches) {
      if (signal.aborted) return;
      const events = b.events.filter((e) => inInterval(e.kv.key, iv));
      if (events.length === 0) continue;
      yield {
        revision: b.revision,
        events: req.prevKv ? events : events.map(({ type, kv }) => ({ type, kv })),
      };
    }
    next = through + 1;
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
