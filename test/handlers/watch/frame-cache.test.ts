import { describe, expect, test } from 'vitest';
import type { WatchBatch } from '../../../db/store.js';
import { FrameCache } from '../../../handlers/watch/frame-cache.js';

const batch = (revision: number, size: number): WatchBatch => ({
  revision,
  events: [{ type: 'put', kv: { key: '/x/k', value: 'v'.repeat(size), createRevision: revision, modRevision: revision, version: 1, lease: 0 } }],
});

describe('the shared frame cache', () => {
  test('bounded in bytes as well as frames: the oldest go first, and a frame larger than the cache is served but not kept', () => {
    const cache = new FrameCache({ maxFrames: 1_000, maxBytes: 10_000 });
    for (let r = 1; r <= 20; r++) cache.frame(batch(r, 1_000), '/x/', false);
    expect(cache.size().bytes).toBeLessThanOrEqual(10_000);
    expect(cache.size().frames).toBeLessThan(20);
    const huge = cache.frame(batch(21, 20_000), '/x/', false);
    expect(huge.bytes).toBeGreaterThan(20_000);
    expect(cache.size().bytes).toBeLessThanOrEqual(10_000);
    // Watchers of the same prefix share one frame.
    expect(cache.frame(batch(20, 1_000), '/x/', false)).toBe(cache.frame(batch(20, 1_000), '/x/', false));
  });

  test('bounded in frames', () => {
    const cache = new FrameCache({ maxFrames: 5, maxBytes: 1e9 });
    for (let r = 1; r <= 20; r++) cache.frame(batch(r, 10), '/x/', false);
    expect(cache.size().frames).toBe(5);
  });
});
