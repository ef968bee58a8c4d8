import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import type { WatchBatch } from '../../db/store.js';
import { HeadWaiters } from '../../db/waiters.js';

describe('watchers parked on the head', () => {
  test('a signal gets one abort listener for all its waits, and its abort ends the current wait', async () => {
    const waiters = new HeadWaiters();
    const ac = new AbortController();
    let head = 0;
    for (let i = 0; i < 1_000; i++) {
      const parked = waiters.wait(() => head > i, ac.signal);
      head++;
      waiters.wake();
      await parked;
    }
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    let ended = false;
    const last = waiters.wait(() => false, ac.signal).then(() => (ended = true));
    await Promise.resolve();
    expect(ended).toBe(false);
    ac.abort();
    await last;
    expect(ended).toBe(true);
    // An aborted signal never parks.
    await waiters.wait(() => false, ac.signal);
  });

  test('a wake releases every parked waiter, each of a different signal', async () => {
    const waiters = new HeadWaiters();
    let head = 0;
    const all = Array.from({ length: 10 }, () => waiters.wait(() => head > 0, new AbortController().signal));
    head = 1;
    waiters.wake();
    await Promise.all(all);
  });
});

describe('watchers of one prefix share each batch', () => {
  async function first(store: MemoryStore, prefix: string, from: number, prevKv = false): Promise<WatchBatch> {
    const ac = new AbortController();
    for await (const b of store.watch({ prefix, fromRevision: from, prevKv, signal: ac.signal })) {
      ac.abort();
      return b;
    }
    throw new Error('no batch');
  }

  test('the same object for the same view; their own keys and prevKv for the others', async () => {
    const store = new MemoryStore();
    await store.put('/a/1', 'old');
    const from = (await store.revision()) + 1;
    await store.txn({ compare: [], success: [{ put: { key: '/a/1', value: 'x' } }, { put: { key: '/b/1', value: 'y' } }], failure: [] });
    const [a1, a2, b, all, aPrev] = await Promise.all([first(store, '/a/', from), first(store, '/a/', from), first(store, '/b/', from), first(store, '', from), first(store, '/a/', from, true)]);
    expect(a1).toBe(a2);
    expect(a1.events.map((e) => e.kv.key)).toEqual(['/a/1']);
    expect(a1.events[0]).not.toHaveProperty('prevKv');
    expect(b.events.map((e) => e.kv.key)).toEqual(['/b/1']);
    expect(all.events.map((e) => e.kv.key)).toEqual(['/a/1', '/b/1']);
    expect(aPrev).not.toBe(a1);
    expect(aPrev.events[0]!.prevKv?.value).toBe('old');
    await store.close();
  });
});
