import { redactDeep } from '../../core/keys.js';
import type { WatchBatch } from '../../db/store.js';

/** One batch as its SSE frame, with its size in bytes (what a watcher's queue counts). */
export interface Frame {
  revision: number;
  text: string;
  bytes: number;
}

/**
 * Watchers of the same prefix get the same frames: redact and serialise each batch once,
 * not once per watcher. Bounded by count and by bytes (oldest out first), keyed by what
 * determines the bytes.
 */
export class FrameCache {
  private readonly frames = new Map<string, Frame>();
  /**
   * The same frames by batch object: watchers of one view are handed the same batch
   * (db/watch-feed.ts), so most lookups need no key built. Lives as long as the batch.
   */
  private readonly byBatch = new WeakMap<WatchBatch, Frame>();
  private bytes = 0;

  constructor(private readonly limits: { maxFrames: number; maxBytes: number }) {}

  frame(batch: WatchBatch, prefix: string, prevKv: boolean): Frame {
    const same = this.byBatch.get(batch);
    if (same) return same;
    const key = `${batch.revision}\u0000${prefix}\u0000${prevKv ? 1 : 0}`;
    const hit = this.frames.get(key);
    if (hit) {
      this.byBatch.set(batch, hit);
      return hit;
    }
    const text = `id: ${batch.revision}\nevent: batch\ndata: ${JSON.stringify(redactDeep(batch))}\n\n`;
    const f: Frame = { revision: batch.revision, text, bytes: Buffer.byteLength(text) };
    this.byBatch.set(batch, f);
    // A frame larger than the whole cache is handed out, not kept.
    if (f.bytes > this.limits.maxBytes) return f;
    this.frames.set(key, f);
    this.bytes += f.bytes;
    while (this.frames.size > this.limits.maxFrames || this.bytes > this.limits.maxBytes) {
      const [oldest, old] = this.frames.entries().next().value!;
      this.frames.delete(oldest);
      this.bytes -= old.bytes;
    }
    return f;
  }

  /** Bytes held now (metrics, tests). */
  size(): { frames: number; bytes: number } {
    return { frames: this.frames.size, bytes: this.bytes };
  }
}
