import { sleep } from '../watch-feed.js';
import type { IDuplexStream, IEvent, IWatchRequest, IWatchResponse } from 'etcd3';
import { CcaError } from '../../core/diagnostics/index.js';
import { tieSignals } from '../../core/abort.js';
import { watchInterval, type KeyInterval } from '../keyspace.js';
import type { WatchBatch, WatchEvent, WatchRequest } from '../store.js';
import type { EtcdKeys } from './keys.js';

export type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

/**
 * Close a gRPC stream we are done with. End our side first: etcd3 treats an error on a
 * still-writable stream (and cancelling one raises CANCELLED) as a failed host and resets
 * every gRPC client of it, so each cancelled watch would cost all callers a reconnect.
 */
export function closeStream(stream: { end(): void; cancel(): void }): void {
  try {
    stream.end();
    stream.cancel();
  } catch {
    // already closed
  }
}

export interface WatchDeps {
  keys: EtcdKeys;
  /** A new gRPC watch stream (one per Store watch: nothing is shared, nothing can block another). */
  openStream(): Promise<WatchStream>;
  /** The newest revision this store has seen in any response. */
  seen(): number;
  note(revision: number): void;
  /** Aborted when the store closes. */
  closing: AbortSignal;
}

/** Responses buffered per watch before the gRPC stream is paused (etcd then holds the rest). */
const HIGH_WATER = 64;
const LOW_WATER = 16;
const MAX_BACKOFF_MS = 2_000;

type Item = { kind: 'response'; res: IWatchResponse } | { kind: 'broken'; reason: string };

/** One gRPC watch stream as a pull queue with backpressure. */
class StreamQueue {
  private items: Item[] = [];
  private waiter: (() => void) | undefined;
  private paused = false;
  private done = false;

  constructor(private readonly stream: WatchStream) {
    stream.on('data', (res) => this.push({ kind: 'response', res }));
    stream.on('error', (err) => this.push({ kind: 'broken', reason: err.message }));
    stream.on('end', () => this.push({ kind: 'broken', reason: 'the watch stream ended' }));
  }

  private push(item: Item): void {
    if (this.done) return;
    this.items.push(item);
    if (this.items.length >= HIGH_WATER && !this.paused) {
      this.paused = true;
      (this.stream as unknown as { pause(): void }).pause();
    }
    this.waiter?.();
  }

  /** The next item, or undefined once the signal aborted. */
  async take(signal: AbortSignal): Promise<Item | undefined> {
    while (this.items.length === 0) {
      if (signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiter = undefined;
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.waiter = wake;
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    if (signal.aborted) return undefined;
    const item = this.items.shift()!;
    if (this.paused && this.items.length <= LOW_WATER) {
      this.paused = false;
      (this.stream as unknown as { resume(): void }).resume();
    }
    return item;
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.items = [];
    closeStream(this.stream);
  }
}

function toEvent(keys: EtcdKeys, e: IEvent, withPrev: boolean): WatchEvent {
  const type = e.type === 'Put' ? 'put' : 'delete';
  const kv = keys.kv(e.kv);
  return withPrev && e.prev_kv ? { type, kv, prevKv: keys.kv(e.prev_kv) } : { type, kv };
}

/** etcd never splits one revision across watch responses (no `fragment`), so grouping per response is exact. */
function batchesOf(keys: EtcdKeys, events: IEvent[], withPrev: boolean): WatchBatch[] {
  const out: WatchBatch[] = [];
  for (const e of events) {
    if (!keys.owns(e.kv.key)) continue;
    const rev = Number(e.kv.mod_revision);
    const last = out[out.length - 1];
    const ev = toEvent(keys, e, withPrev);
    if (last && last.revision === rev) last.events.push(ev);
    else out.push({ revision: rev, events: [ev] });
  }
  return out;
}


/**
 * An etcd watch as the Store's watch batches. The start revision is settled at call time:
 * `fromRevision`, or one past the newest revision this store has seen (like the Postgres
 * store's known head), so "watch, then write, then iterate" never misses the write.
 *
 * Because EtcdStore compacts etcd one revision below the store's compact revision, the
 * etcd watch starts at from−1 (etcd refuses it exactly when `from` is below the store's
 * compact revision) and events below `from` are dropped. A broken stream is reopened from
 * the next undelivered revision, so delivery stays ordered, gap-free and once-only.
 */
export function watchEtcd(deps: WatchDeps, req: WatchRequest): AsyncGenerator<WatchBatch> {
  const iv = watchInterval(req);
  const explicit = req.fromRevision !== undefined && req.fromRevision > 0;
  const start = explicit ? req.fromRevision! : deps.seen() + 1;
  return follow(deps, req, iv, start, explicit);
}

async function* follow(
  deps: WatchDeps,
  req: WatchRequest,
  iv: KeyInterval,
  start: number,
  explicit: boolean,
): AsyncGenerator<WatchBatch> {
  // Tied, not AbortSignal.any: the store's closing signal lives as long as the store (core/abort.ts).
  const tie = req.signal ? tieSignals([req.signal, deps.closing]) : undefined;
  try {
    yield* followTied(deps, req, iv, start, explicit, tie?.signal ?? deps.closing);
  } finally {
    tie?.done();
  }
}

async function* followTied(
  deps: WatchDeps,
  req: WatchRequest,
  iv: KeyInterval,
  start: number,
  explicit: boolean,
  signal: AbortSignal,
): AsyncGenerator<WatchBatch> {
  const withPrev = req.prevKv ?? false;
  let next = start;
  /**
   * Only the first stream of a watch without fromRevision, before it delivered anything,
   * may skip ahead on `compacted`: its start was this store's newest seen revision, which
   * can be stale. Any later compaction past `next` is a real loss and fails the watch.
   */
  let mayJump = !explicit;
  let backoff = 50;
  while (!signal.aborted) {
    let stream: WatchStream;
    try {
      stream = await deps.openStream();
    } catch {
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      continue;
    }
    const queue = new StreamQueue(stream);
    try {
      stream.write({
        create_request: { ...deps.keys.range(iv), start_revision: Math.max(1, next - 1), prev_kv: withPrev },
      });
      for (;;) {
        const item = await queue.take(signal);
        if (!item) return;
        if (item.kind === 'broken') break;
        const res = item.res;
        const etcdCompact = Number(res.compact_revision);
        if (etcdCompact > 0) {
          const compactRevision = etcdCompact + 1;
          if (mayJump) {
            // The revision we started after was stale and is gone: "from now" is still honest from here.
            next = Math.max(next, compactRevision);
            break;
          }
          throw new CcaError('CCA-E0101', { revision: next, compactRevision });
        }
        if (res.canceled) {
          throw new CcaError('CCA-E0118', { backend: 'etcd', reason: `watch canceled: ${res.cancel_reason || 'no reason given'}` });
        }
        deps.note(Number(res.header.revision));
        backoff = 50;
        for (const b of batchesOf(deps.keys, res.events, withPrev)) {
          if (b.revision < next) continue;
          next = b.revision + 1;
          mayJump = false;
          yield b;
          if (signal.aborted) return;
        }
      }
    } finally {
      queue.close();
    }
    mayJump = false; // a stream ended: what follows resumes a watch that was already running
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
}
