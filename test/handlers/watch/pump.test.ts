import { describe, expect, test } from 'vitest';
import type { WatchBatch } from '../../../db/store.js';
import { FlushTick } from '../../../handlers/watch/flush-tick.js';
import { pulledLine } from '../../../handlers/watch/frame-line.js';
import { pumpFrames } from '../../../handlers/watch/pump.js';
import { PodBytes, WatchQueue } from '../../../handlers/watch/watch-queue.js';

const batch = (revision: number): WatchBatch => ({ revision, events: [{ type: 'put', kv: { key: `/k${revision}`, value: 'v', createRevision: revision, modRevision: revision, version: 1, lease: 0 } }] });

/** A channel of batches the test pushes into while the pump reads it. */
function channel() {
  const items: WatchBatch[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  return {
    push(b: WatchBatch) {
      items.push(b);
      wake?.();
    },
    close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<WatchBatch> {
      for (;;) {
        if (items.length > 0) yield items.shift()!;
        else if (closed) return;
        else await new Promise<void>((r) => (wake = r));
      }
    },
  };
}

async function run(beforeWrite: (() => Promise<void>) | undefined, feed: (ch: ReturnType<typeof channel>) => Promise<void>, frameBytes = 8) {
  const writes: string[] = [];
  const ch = channel();
  const queue = new WatchQueue(new PodBytes(1 << 30), 1 << 20);
  const line = pulledLine(ch, (b) => ({ revision: b.revision, text: `id: ${b.revision}\n\n`, bytes: frameBytes }));
  const pumped = pumpFrames({ write: async (t: string) => void writes.push(t) }, line, {
    queue,
    stallMs: 10_000,
    signal: new AbortController().signal,
    ...(beforeWrite ? { beforeWrite } : {}),
  });
  await feed(ch);
  ch.close();
  expect(await pumped).toBeUndefined();
  return writes;
}

describe('a watcher\'s frames to its socket', () => {
  test('frames that arrive while the writer waits for the tick go out in one write, in order', async () => {
    let open!: () => void;
    const gate = () => new Promise<void>((r) => (open = r));
    const writes = await run(gate, async (ch) => {
      for (let r = 1; r <= 5; r++) ch.push(batch(r));
      // Let the writer reach the gate with the first frame, then the rest arrive behind it.
      await new Promise((r) => setTimeout(r, 10));
      open();
      await new Promise((r) => setTimeout(r, 10));
      ch.push(batch(6));
      await new Promise((r) => setTimeout(r, 10));
      open();
    });
    expect(writes).toEqual(['id: 1\n\nid: 2\n\nid: 3\n\nid: 4\n\nid: 5\n\n', 'id: 6\n\n']);
  });

  test('a writer with a backlog writes chunk after chunk without waiting for another tick (a catching-up watcher is not capped at a chunk per tick)', async () => {
    let ticks = 0;
    let open!: () => void;
    const gate = () => {
      ticks++;
      return new Promise<void>((r) => (open = r));
    };
    // 40 KiB frames: one per 64 KiB chunk.
    const writes = await run(gate, async (ch) => {
      for (let r = 1; r <= 3; r++) ch.push(batch(r));
      await new Promise((r) => setTimeout(r, 10));
      open();
      await new Promise((r) => setTimeout(r, 10));
    }, 40 * 1024);
    expect(writes).toEqual(['id: 1\n\n', 'id: 2\n\n', 'id: 3\n\n']);
    expect(ticks).toBe(1);
  });

  test('with no tick each frame is written as soon as the writer is free', async () => {
    const writes = await run(undefined, async (ch) => {
      for (let r = 1; r <= 3; r++) {
        ch.push(batch(r));
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    expect(writes).toEqual(['id: 1\n\n', 'id: 2\n\n', 'id: 3\n\n']);
  });

  test('one pod-wide tick: every writer waiting in the same tick shares one timer', async () => {
    const tick = new FlushTick(20);
    const a = tick.next();
    const b = tick.next();
    expect(a).toBe(b);
    await a;
    expect(tick.next()).not.toBe(a);
    // 0 ms: no waiting at all.
    const now = new FlushTick(0);
    let done = false;
    void now.next().then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(true);
  });
});
