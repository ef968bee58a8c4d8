import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { intervalOf } from '../../db/keyspace.js';
import type { WatchBatch } from '../../db/store.js';
import { TouchWaiters } from '../../db/waiters.js';

/** A batch at `revision` writing `keys`. */
function batch(revision: number, ...keys: string[]): WatchBatch {
  return { revision, events: keys.map((key) => ({ type: 'put' as const, kv: { key, value: 'v', createRevision: revision, modRevision: revision, version: 1, lease: 0 } })) };
}

/** The value a promise has settled with by now, or 'parked'. */
async function state(p: Promise<number>): Promise<number | 'parked'> {
  return Promise.race([p, new Promise<'parked'>((r) => setImmediate(() => r('parked')))]);
}

const signal = () => new AbortController().signal;

describe('watchers parked by interval', () => {
  test('a batch wakes only the watchers it touches, each told the first revision that does', async () => {
    const ws = new TouchWaiters(10);
    const a = ws.wait(intervalOf({ prefix: '/assigned/n1/' }), 11, signal());
    const b = ws.wait(intervalOf({ prefix: '/assigned/n2/' }), 11, signal());
    const all = ws.wait(intervalOf({ prefix: '' }), 11, signal());
    const key = ws.wait(intervalOf({ key: '/net/rules/n1' }), 11, signal());
    const range = ws.wait(intervalOf({ start: '/m', end: '/n' }), 11, signal());
    ws.passed([batch(11, '/assigned/n2/x'), batch(12, '/assigned/n1/y', '/net/rules/n2'), batch(13, '/mm')], 13);
    expect(await state(a)).toBe(12);
    expect(await state(b)).toBe(11);
    expect(await state(all)).toBe(11);
    expect(await state(key)).toBe('parked');
    expect(await state(range)).toBe(13);
    expect(ws.size()).toBe(1);
  });

  test('nested and neighbouring prefixes: a key wakes every prefix of it and no other', async () => {
    const ws = new TouchWaiters(0);
    const outer = ws.wait(intervalOf({ prefix: '/assigned/' }), 1, signal());
    const inner = ws.wait(intervalOf({ prefix: '/assigned/n1/' }), 1, signal());
    const sibling = ws.wait(intervalOf({ prefix: '/assigned/n1x/' }), 1, signal());
    const shorter = ws.wait(intervalOf({ prefix: '/assigned/n1' }), 1, signal());
    ws.passed([batch(1, '/assigned/n1/a')], 1);
    expect([await state(outer), await state(inner), await state(sibling), await state(shorter)]).toEqual([1, 1, 'parked', 1]);
  });

  test('a watcher that sleeps through untouched batches is released past them, never before', async () => {
    const ws = new TouchWaiters(10);
    const ac = new AbortController();
    const parked = ws.wait(intervalOf({ prefix: '/a/' }), 11, ac.signal);
    ws.passed([batch(11, '/b/1'), batch(12, '/b/2')], 12);
    ws.passed([batch(13, '/c/1')], 13);
    expect(await state(parked)).toBe('parked');
    ac.abort();
    expect(await state(parked)).toBe(14);
    // Released: from where it has not been shown.
    const again = ws.wait(intervalOf({ prefix: '/a/' }), 14, signal());
    ws.passed([batch(14, '/b/3')], 14);
    ws.releaseAll();
    expect(await state(again)).toBe(15);
  });

  test('a watcher waiting for a later revision is not woken by an earlier one', async () => {
    const ws = new TouchWaiters(10);
    const later = ws.wait(intervalOf({ prefix: '/a/' }), 13, signal());
    ws.passed([batch(11, '/a/1'), batch(12, '/a/2')], 12);
    expect(await state(later)).toBe('parked');
    ws.passed([batch(13, '/a/3')], 13);
    expect(await state(later)).toBe(13);
  });

  test('revisions the source skipped release whoever had not been shown them; revisions already passed are never waited for', async () => {
    const ws = new TouchWaiters(10);
    const behind = ws.wait(intervalOf({ prefix: '/a/' }), 11, signal());
    const ahead = ws.wait(intervalOf({ prefix: '/a/' }), 20, signal());
    ws.passed([batch(15, '/b/1')], 15); // 11-14 were never shown
    expect(await state(behind)).toBe(11);
    expect(await state(ahead)).toBe('parked');
    expect(await state(ws.wait(intervalOf({ prefix: '/a/' }), 14, signal()))).toBe(14);
    expect(ws.lowestNext()).toBe(20);
  });

  test('a signal gets one abort listener for all its waits', async () => {
    const ws = new TouchWaiters(0);
    const ac = new AbortController();
    for (let r = 1; r <= 200; r++) {
      const p = ws.wait(intervalOf({ prefix: '/a/' }), r, ac.signal);
      ws.passed([batch(r, '/a/x')], r);
      expect(await p).toBe(r);
    }
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    expect(ws.size()).toBe(0);
  });
});
