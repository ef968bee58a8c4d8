import type { WatchBatch } from '../../db/store.js';
import type { Frame } from './frame-cache.js';

/** How a FrameLine's run() stopped. */
export type LineStop = 'paused' | 'ended' | 'aborted';

/**
 * One watcher's frames, in revision order, each once, from where it stands. The pump asks
 * for frames with run() and answers each with whether it wants more: a watcher at its
 * byte bound says no, and the line stops right after that frame ('paused'); the next run()
 * goes on from there. Pulled or pushed is the line's business (handlers/watch/shared-feeds.ts
 * pushes the frames of a busy prefix to all its watchers at once).
 */
export interface FrameLine {
  /** Throws what the store's watch throws (a compacted start: CCA-E0101). */
  run(push: (f: Frame) => boolean, signal: AbortSignal): Promise<LineStop>;
  /** The watcher is done: give back whatever the line holds. */
  close(): void;
}

/** A line pulled from one store watch, each batch made a frame by `frame`. */
export function pulledLine(batches: AsyncIterable<WatchBatch>, frame: (b: WatchBatch) => Frame): FrameLine {
  const it = batches[Symbol.asyncIterator]();
  return {
    async run(push, signal) {
      for (;;) {
        if (signal.aborted) return 'aborted';
        const r = await it.next();
        if (r.done) return signal.aborted ? 'aborted' : 'ended';
        if (!push(frame(r.value))) return 'paused';
      }
    },
    close() {
      void it.return?.();
    },
  };
}
