import type { FrameLine } from './frame-line.js';
import type { Bound, WatchQueue } from './watch-queue.js';
import type { Frame } from './frame-cache.js';

/** Frames that wait together go out in one socket write of about this many bytes. */
const CHUNK_BYTES = 64 * 1024;

/** A watcher cut at a bound: where it stood. */
export interface Cut {
  bound: Bound;
  resumeFrom: number;
  queuedBytes: number;
}

export interface PumpOptions {
  queue: WatchQueue;
  /** How long a watcher at a bound may send nothing before it is cut. */
  stallMs: number;
  /** The client went away or the pod is draining. */
  signal: AbortSignal;
  /** Waited for before the first write after the queue ran empty, so frames arriving meanwhile share it (FlushTick); none: write at once. */
  beforeWrite?: () => Promise<void>;
}

/**
 * Frames from the watcher's line to the socket through its queue. The line is run only
 * while the watcher is below its bounds; one that stays at a bound for `stallMs` without a
 * single write completing is cut (its unsent frames dropped), and the answer says where it
 * must resume. Returns undefined when the line ended or the signal aborted.
 */
export async function pumpFrames(stream: { write(text: string): Promise<unknown> }, line: FrameLine, o: PumpOptions): Promise<Cut | undefined> {
  const { queue } = o;
  let ended = false;
  let wakeWriter: (() => void) | undefined;
  let progressed: (() => void) | undefined;
  const writer = (async () => {
    // Only a writer coming back from idle waits for the tick: one with a backlog has
    // frames to put together already, and waiting between its chunks would cap a
    // catching-up watcher at a chunk per tick.
    let idle = true;
    for (;;) {
      if (queue.waiting() === 0) {
        if (ended) return;
        idle = true;
        await new Promise<void>((r) => (wakeWriter = r));
        continue;
      }
      if (idle && o.beforeWrite) await o.beforeWrite();
      idle = false;
      // A cut may have dropped what was waiting.
      const chunk = queue.take(CHUNK_BYTES);
      if (!chunk) continue;
      await stream.write(chunk.text);
      queue.written(chunk.bytes);
      progressed?.();
    }
  })();
  // Called for every frame, by a pushing line inside its fan-out loop: no await, no allocation.
  const push = (f: Frame): boolean => {
    queue.push(f);
    const w = wakeWriter;
    wakeWriter = undefined;
    w?.();
    return queue.over() === undefined;
  };
  let cut: Cut | undefined;
  try {
    for (;;) {
      const stop = await line.run(push, o.signal);
      if (stop !== 'paused') break;
      const bound = queue.over();
      if (bound === undefined) continue;
      const outcome = await drained(queue, o.stallMs, o.signal, (r) => (progressed = r));
      if (outcome === 'aborted') break;
      if (outcome === 'stalled') {
        cut = { bound: queue.over() ?? bound, resumeFrom: queue.resumeFrom(), queuedBytes: queue.bytes() };
        break;
      }
    }
  } finally {
    ended = true;
    line.close();
    if (cut) queue.drop();
    wakeWriter?.();
  }
  // A cut watcher's last write may never complete (its client reads nothing): not waited for.
  if (!cut) await writer;
  return cut;
}

/** Wait until the queue is below its bounds: 'stalled' when no write completed for `stallMs`. */
async function drained(queue: WatchQueue, stallMs: number, signal: AbortSignal, onProgress: (r: () => void) => void): Promise<'ok' | 'stalled' | 'aborted'> {
  while (queue.over() !== undefined) {
    if (signal.aborted) return 'aborted';
    const moved = await new Promise<boolean>((resolve) => {
      const done = (v: boolean) => {
        clearTimeout(t);
        signal.removeEventListener('abort', aborted);
        resolve(v);
      };
      const aborted = () => done(true);
      const t = setTimeout(() => done(false), stallMs);
      signal.addEventListener('abort', aborted, { once: true });
      onProgress(() => done(true));
    });
    if (!moved && queue.over() !== undefined) return 'stalled';
  }
  return signal.aborted ? 'aborted' : 'ok';
}
