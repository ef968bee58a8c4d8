import { afterEach, describe, expect, test } from 'vitest';
import { isCcaError } from '../../../core/diagnostics/index.js';
import { MemoryStore } from '../../../db/memory.js';
import type { WatchBatch, WatchRequest } from '../../../db/store.js';
import type { Frame } from '../../../handlers/watch/frame-cache.js';
import type { FrameLine, LineStop } from '../../../handlers/watch/frame-line.js';
import { SharedFeeds, type FeedLimits } from '../../../handlers/watch/shared-feeds.js';

/** A memory store that counts the store watches opened and the ones still open. */
class CountingStore extends MemoryStore {
  opened = 0;
  open = 0;
  override watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    this.opened++;
    this.open++;
    const inner = super.watch(req);
    const self = this;
    return (async function* () {
      try {
        yield* inner;
      } finally {
        self.open--;
      }
    })();
  }
}

const frame = (b: WatchBatch): Frame => {
  const text = `id: ${b.revision}\ndata: ${b.events.map((e) => e.kv.key).join(',')}\n\n`;
  return { revision: b.revision, text, bytes: text.length };
};

/** A watcher's side of a line: what it received, and run() going in the background until it stops. */
function consume(line: FrameLine, signal: AbortSignal, wantMore: (got: number[]) => boolean = () => true) {
  const got: number[] = [];
  const run = line.run((f) => {
    got.push(f.revision);
    return wantMore(got);
  }, signal);
  return { got, run };
}

const settle = async (until: () => boolean, what: string) => {
  for (let i = 0; i < 500 && !until(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(until(), what).toBe(true);
};

let store: CountingStore;
let ac: AbortController;
afterEach(async () => {
  ac.abort();
  await store.close();
});

function setup(limits: FeedLimits = { frames: 64, bytes: 1 << 20 }) {
  store = new CountingStore();
  ac = new AbortController();
  return new SharedFeeds(store, (b) => frame(b), limits);
}

let written = 0;
async function writes(prefix: string, n: number): Promise<number[]> {
  const revs: number[] = [];
  for (let i = 0; i < n; i++) revs.push((await store.put(`${prefix}${written % 3}`, `v${written++}`)).revision);
  return revs;
}

describe('shared feeds: the watchers of one prefix at the head share one store watch', () => {
  test('twenty watchers of /a/ cost one store watch; each gets every /a/ revision once, in order, and nothing of /b/', async () => {
    const feeds = setup();
    const head = await store.revision();
    const from = head + 1;
    const watchers = Array.from({ length: 20 }, () => consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal));
    const a: number[] = [];
    for (let i = 0; i < 15; i++) {
      a.push(...(await writes('/a/', 1)));
      await writes('/b/', 1);
    }
    await settle(() => watchers.every((w) => w.got.length === a.length), 'every watcher has every /a/ revision');
    for (const w of watchers) expect(w.got).toEqual(a);
    expect(store.opened).toBe(1);
    expect(feeds.stats()).toEqual({ feeds: 1, joined: 20 });
  });

  test('a watcher starting behind what the feed keeps pulls on its own, then joins: no gap, no duplicate', async () => {
    const feeds = setup({ frames: 2, bytes: 1 << 20 });
    const head = await store.revision();
    const from = head + 1;
    const first = consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal);
    const early = await writes('/a/', 10);
    await settle(() => first.got.length === 10, 'the first watcher is at the head');
    // The feed keeps the last 2 frames: a watcher from the start must read the rest itself.
    const late = consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal);
    await settle(() => late.got.length === 10, 'the late watcher caught up');
    const more = await writes('/a/', 10);
    await settle(() => late.got.length === 20 && first.got.length === 20, 'both have everything');
    expect(late.got).toEqual([...early, ...more]);
    expect(first.got).toEqual([...early, ...more]);
    // Its own watch was given up once it reached the feed.
    expect(store.opened).toBe(2);
    expect(store.open).toBe(1);
    expect(feeds.stats()).toEqual({ feeds: 1, joined: 2 });
  });

  test('a watcher a little behind joins at once from what the feed keeps', async () => {
    const feeds = setup({ frames: 64, bytes: 1 << 20 });
    const head = await store.revision();
    const from = head + 1;
    const first = consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal);
    const early = await writes('/a/', 5);
    await settle(() => first.got.length === 5, 'the first watcher is at the head');
    const second = consume(feeds.line({ prefix: '/a/', prevKv: false }, early[2]!, early.at(-1)!), ac.signal);
    await settle(() => second.got.length === 3, 'the kept frames were replayed');
    expect(second.got).toEqual(early.slice(2));
    expect(store.opened).toBe(1);
  });

  test('a watcher at its bound leaves the feed and comes back from exactly where it stopped', async () => {
    const feeds = setup({ frames: 3, bytes: 1 << 20 });
    const head = await store.revision();
    const from = head + 1;
    const other = consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal);
    const line = feeds.line({ prefix: '/a/', prevKv: false }, from, head);
    const slow = consume(line, ac.signal, (got) => got.length < 4);
    const revs = await writes('/a/', 12);
    expect(await slow.run).toBe<LineStop>('paused');
    expect(slow.got).toEqual(revs.slice(0, 4));
    await settle(() => other.got.length === 12, 'the other watcher was not held back');
    expect(feeds.stats().joined).toBe(1);
    // Drained: it goes on from revision revs[4], by itself (the feed keeps only 3), then joins.
    const rest: number[] = [];
    void line.run((f) => (rest.push(f.revision), true), ac.signal);
    const more = await writes('/a/', 3);
    await settle(() => rest.length === 11, 'the slow watcher has the rest');
    expect(rest).toEqual([...revs.slice(4), ...more]);
    await settle(() => feeds.stats().joined === 2, 'it joined the feed again');
  });

  test('the last watcher of a view to leave stops the feed\'s store watch; the next one starts another', async () => {
    const feeds = setup();
    const head = await store.revision();
    const from = head + 1;
    const lines = [feeds.line({ prefix: '/a/', prevKv: false }, from, head), feeds.line({ prefix: '/a/', prevKv: false }, from, head)];
    const runs = lines.map((l) => consume(l, ac.signal));
    await writes('/a/', 2);
    await settle(() => runs.every((r) => r.got.length === 2), 'both watching');
    lines[0]!.close();
    await writes('/a/', 1);
    await settle(() => runs[1]!.got.length === 3, 'the other one still gets frames');
    expect(store.open).toBe(1);
    lines[1]!.close();
    await writes('/a/', 1);
    await settle(() => store.open === 0, 'the feed stopped watching');
    expect(feeds.stats().feeds).toBe(0);
    const again = consume(feeds.line({ prefix: '/a/', prevKv: false }, (await store.revision()) + 1, await store.revision()), ac.signal);
    const last = await writes('/a/', 1);
    await settle(() => again.got.length === 1, 'a new feed');
    expect(again.got).toEqual(last);
  });

  test('a start that was compacted ends the watcher with CCA-E0101 (its feed ends first; it does not start feed after feed)', async () => {
    const feeds = setup();
    await writes('/a/', 6);
    await store.compact(5);
    const w = consume(feeds.line({ prefix: '/a/', prevKv: false }, 2, await store.revision()), ac.signal);
    const e: unknown = await w.run.then(
      () => new Error('it ran'),
      (err: unknown) => err,
    );
    expect(isCcaError(e) && e.code).toBe('CCA-E0101');
    expect(store.opened).toBeLessThanOrEqual(3);
  });

  test('a feed starts at the head, not where its first watcher asked: one from long ago reads history by itself', async () => {
    const feeds = setup();
    const history = await writes('/a/', 40);
    const head = await store.revision();
    // The old watcher comes first: were the feed started at its position, the watcher at
    // the head would wait on the feed reading those 40 revisions.
    const old = consume(feeds.line({ prefix: '/a/', prevKv: false }, 1, head), ac.signal);
    const now = consume(feeds.line({ prefix: '/a/', prevKv: false }, head + 1, head), ac.signal);
    await settle(() => old.got.length === 40, 'the old watcher read the history');
    expect(store.opened).toBe(2);
    const fresh = await writes('/a/', 3);
    await settle(() => old.got.length === 43 && now.got.length === 3, 'both have the new revisions');
    expect(old.got).toEqual([...history, ...fresh]);
    expect(now.got).toEqual(fresh);
    expect(feeds.stats()).toEqual({ feeds: 1, joined: 2 });
  });

  test('a watcher from a revision not yet written joins the feed and gets nothing before it', async () => {
    const feeds = setup();
    const head = await store.revision();
    const future = consume(feeds.line({ prefix: '/a/', prevKv: false }, head + 5, head), ac.signal);
    const now = consume(feeds.line({ prefix: '/a/', prevKv: false }, head + 1, head), ac.signal);
    const revs = await writes('/a/', 6);
    await settle(() => now.got.length === 6 && future.got.length === 2, 'each from where it asked');
    expect(future.got).toEqual(revs.filter((r) => r >= head + 5));
    expect(store.opened).toBe(1);
  });

  test('views differ by prefix and by prevKv: each has its own feed', async () => {
    const feeds = setup();
    const head = await store.revision();
    const from = head + 1;
    const plain = consume(feeds.line({ prefix: '/a/', prevKv: false }, from, head), ac.signal);
    const withPrev = consume(feeds.line({ prefix: '/a/', prevKv: true }, from, head), ac.signal);
    const other = consume(feeds.line({ prefix: '/b/', prevKv: false }, from, head), ac.signal);
    const a = await writes('/a/', 2);
    const b = await writes('/b/', 2);
    await settle(() => plain.got.length === 2 && withPrev.got.length === 2 && other.got.length === 2, 'each view has its revisions');
    expect(plain.got).toEqual(a);
    expect(withPrev.got).toEqual(a);
    expect(other.got).toEqual(b);
    expect(feeds.stats()).toEqual({ feeds: 3, joined: 3 });
  });
});
