import { afterEach, expect, test } from 'vitest';
import { CcaError, type Diagnostic } from '../../core/diagnostics/index.js';
import { MemoryStore } from '../../db/memory.js';
import { StoreMirror, type MirrorOptions, type MirrorReadWay } from '../../db/mirror.js';
import type { RangeRequest, Store, WatchBatch, WatchRequest } from '../../db/store.js';
import { generateHistory, rng, runOp, seedFromEnv } from './random-history.js';

const opened: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

/**
 * A mirror of the keys random-history writes under 'a/', 'b' and '😀' (a surrogate pair: key
 * order is UTF-8's), once it is live (while it lists, reads go to the store).
 */
async function mirrorOf(store: Store, opts: Partial<MirrorOptions> = {}) {
  const ways = new Map<MirrorReadWay, number>();
  const diagnostics: Diagnostic[] = [];
  const mirror = new StoreMirror(store, {
    prefixes: ['a/', 'b', '😀'],
    onRead: (w) => ways.set(w, (ways.get(w) ?? 0) + 1),
    onDiagnostic: (d) => diagnostics.push(d),
    ...opts,
  }).start();
  opened.push(mirror);
  await expect.poll(() => mirror.status().state).toBe('live');
  return { mirror, ways, diagnostics };
}

/** Ranges inside the mirrored prefixes, and some that are not. */
const COVERED: RangeRequest[] = [
  { prefix: 'a/' }, { prefix: 'a/2' }, { prefix: 'a/2/' }, { key: 'a/1' }, { key: 'a/2/x' }, { prefix: 'b' }, { prefix: 'b/' }, { key: 'b' },
  { start: 'a/1', end: 'a/2/y' }, { prefix: '😀' }, { key: '😀' },
];
const UNCOVERED: RangeRequest[] = [{ prefix: 'a' }, { prefix: '' }, { key: 'é' }, { start: 'a/', end: 'c' }];

/** Every shape a range can take: limits, reverse, keys only, count only. */
function shaped(base: RangeRequest, next: () => number): RangeRequest {
  return { ...base, limit: Math.floor(next() * 4), reverse: next() < 0.3, keysOnly: next() < 0.2, countOnly: next() < 0.1 };
}

test("a step's view reads what the store holds at the revision it answers, and at least the store's head when it began", async () => {
  const seed = seedFromEnv();
  console.log(`mirror history seed ${seed} (CCA_SEED=${seed} replays it)`);
  const next = rng(seed);
  const store = new MemoryStore();
  opened.push(store);
  const { mirror, ways } = await mirrorOf(store);
  const history = generateHistory(next, 600);
  // People's reads: one long-lived view, each read at or after the head as of that read.
  const people = mirror.consistent(store);
  let checks = 0;
  for (const [i, op] of history.entries()) {
    await runOp(store, op);
    if (i % 3 !== 0) continue;
    const view = mirror.reads(store);
    const head = await store.revision();
    for (const base of [...COVERED, ...UNCOVERED]) {
      const req = shaped(base, next);
      const got = await view.range(req);
      expect(got.revision, `seed ${seed}, op ${i}: read below the head the step began at`).toBeGreaterThanOrEqual(head);
      const want = await store.range({ ...req, revision: got.revision });
      expect({ ...got, revision: 0 }, `seed ${seed}, op ${i}: ${JSON.stringify(req)}`).toEqual({ ...want, revision: 0 });
      const theirs = await people.range(req);
      expect(theirs.revision, `seed ${seed}, op ${i}: a person's read below the head`).toBe(head);
      expect({ ...theirs, revision: 0 }, `seed ${seed}, op ${i}: a person's ${JSON.stringify(req)}`).toEqual({ ...want, revision: 0 });
      checks++;
    }
    const keys = ['a/1', 'a/2/x', 'b', 'b/1', '😀'];
    const many = await view.getMany(keys);
    expect(many, `seed ${seed}, op ${i}: getMany`).toEqual(await Promise.all(keys.map((k) => store.get(k))));
  }
  expect(checks).toBeGreaterThan(2_000);
  // The answers above came from the mirror, not from the store behind it.
  const covered = (2 * history.length / 3) * COVERED.length;
  expect(ways.get('mirror') ?? 0, JSON.stringify([...ways])).toBeGreaterThan(covered * 0.9);
  expect(ways.get('store-uncovered') ?? 0).toBeGreaterThan(0);
});

test("a view reads its own writes and another writer's writes made before it began", async () => {
  const store = new MemoryStore();
  opened.push(store);
  const { mirror, ways } = await mirrorOf(store);
  await store.put('a/1', 'one');
  const view = mirror.reads(store);
  expect((await view.get('a/1'))?.value).toBe('one');
  // Written by the step itself: read back at once, however far behind the feed is.
  await view.txn({ compare: [], success: [{ put: { key: 'a/2', value: 'two' } }] });
  expect((await view.get('a/2'))?.value).toBe('two');
  await view.put('b', 'bee');
  expect((await view.range({ prefix: 'b' })).kvs.map((kv) => kv.value)).toEqual(['bee']);
  await view.delete('a/1');
  expect(await view.get('a/1')).toBeNull();
  expect(ways.get('mirror')).toBe(4);
  expect([...ways.keys()]).toEqual(['mirror']);
});

test("a step's reads started together share one head read; a write of its own made meanwhile stays in sight", async () => {
  const store = new MemoryStore();
  opened.push(store);
  const { mirror } = await mirrorOf(store);
  await store.put('a/1', 'one');
  let heads = 0;
  const counted = new Proxy(store, {
    get(target, prop) {
      if (prop === 'revision') return () => (heads++, target.revision());
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  const view = mirror.reads(counted);
  const got = await Promise.all([view.get('a/1'), view.range({ prefix: 'a/' }), view.get('b'), view.range({ prefix: 'b' })]);
  expect(got[0]?.value).toBe('one');
  expect(heads).toBe(1);
  // The view's own write lands while its first read waits for the head: that read's floor includes it.
  const other = mirror.reads(counted);
  const [, written] = await Promise.all([other.get('a/1'), other.put('a/3', 'three')]);
  expect(await other.get('a/3')).toMatchObject({ value: 'three', modRevision: written.revision });
});

test("a person's reads see every write committed before them; a read at the revision one answered at uses that snapshot", async () => {
  const store = new MemoryStore();
  opened.push(store);
  const { mirror, ways } = await mirrorOf(store);
  const people = mirror.consistent(store);
  for (let i = 0; i < 20; i++) {
    await store.put('a/1', `v${i}`); // another writer, the instant before the read
    expect((await people.get('a/1'))?.value).toBe(`v${i}`);
  }
  const first = await people.range({ prefix: 'a/' });
  await store.put('b', 'later');
  await store.compact(await store.revision());
  expect((await people.range({ prefix: 'b', revision: first.revision })).kvs).toEqual([]);
  expect(ways.get('mirror')).toBe(22);
});

test('a paged read continues on the snapshot its first page read, however the store moved since', async () => {
  const store = new MemoryStore();
  opened.push(store);
  const { mirror } = await mirrorOf(store);
  for (let i = 0; i < 5; i++) await store.put(`a/${i}`, 'v1');
  const view = mirror.reads(store);
  const first = await view.range({ prefix: 'a/', limit: 2 });
  for (let i = 0; i < 5; i++) await store.put(`a/${i}`, 'v2');
  await store.compact(await store.revision()); // the store itself could no longer answer at that revision
  const rest = await view.range({ start: 'a/1\u0001', end: 'a0', revision: first.revision });
  expect([...first.kvs, ...rest.kvs].map((kv) => `${kv.key}=${kv.value}`)).toEqual(['a/0=v1', 'a/1=v1', 'a/2=v1', 'a/3=v1', 'a/4=v1']);
});

test('past its byte bound the mirror turns itself off once (CCA-E0129) and views read the store', async () => {
  const store = new MemoryStore();
  opened.push(store);
  const { mirror, ways, diagnostics } = await mirrorOf(store, { maxBytes: 2_000 });
  await store.put('a/1', 'x');
  expect((await mirror.reads(store).get('a/1'))?.value).toBe('x');
  expect(ways.get('mirror')).toBe(1);
  for (let i = 0; i < 20; i++) await store.put(`a/big/${i}`, 'y'.repeat(100));
  const view = mirror.reads(store);
  expect((await view.range({ prefix: 'a/big/' })).count).toBe(20);
  expect(mirror.status()).toMatchObject({ state: 'off', keys: 0, bytes: 0 });
  expect(diagnostics.map((d) => d.code)).toEqual(['CCA-E0129']);
  expect(ways.get('store-not-ready')).toBe(1);
});

/** The store, with its watch replaced (the feed's failures, which a real store rarely shows on demand). */
function withWatch(store: Store, watch: (req: WatchRequest, call: number) => AsyncIterable<WatchBatch>): Store {
  let calls = 0;
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'watch') return (req: WatchRequest) => watch(req, calls++);
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

test('a feed that stays behind costs a read catchUpMs, then the read goes to the store', async () => {
  const store = new MemoryStore();
  opened.push(store);
  // A watch that never delivers (a stuck connection), until the mirror closes.
  const stuck = withWatch(store, (req) => ({
    async *[Symbol.asyncIterator]() {
      await new Promise<void>((resolve) => req.signal?.addEventListener('abort', () => resolve(), { once: true }));
    },
  }));
  await store.put('a/1', 'old');
  const { mirror, ways } = await mirrorOf(stuck, { catchUpMs: 50 });
  expect((await mirror.reads(stuck).get('a/1'))?.value).toBe('old'); // listed after the put: no wait
  expect(ways.get('mirror')).toBe(1);
  await store.put('a/1', 'new');
  expect((await mirror.reads(stuck).get('a/1'))?.value).toBe('new');
  expect(ways.get('store-behind')).toBe(1);
});

test('a feed that fails lists again: a bug is reported once (CCA-E0130), compaction silently', async () => {
  const store = new MemoryStore();
  opened.push(store);
  const failing = withWatch(store, (req, call) => {
    if (call === 0) return { [Symbol.asyncIterator]: async function* () { throw new Error('decoder broke'); } };
    if (call === 1) return { [Symbol.asyncIterator]: async function* () { throw new CcaError('CCA-E0101', { revision: 1, compactRevision: 2 }); } };
    return store.watch(req);
  });
  const { mirror, ways, diagnostics } = await mirrorOf(failing);
  await store.put('a/1', 'x');
  await expect.poll(() => mirror.status().state, { timeout: 5_000 }).toBe('live');
  expect((await mirror.reads(failing).get('a/1'))?.value).toBe('x');
  await store.put('a/1', 'y');
  expect((await mirror.reads(failing).get('a/1'))?.value).toBe('y');
  expect(ways.get('mirror')).toBe(2);
  expect(diagnostics.map((d) => d.code)).toEqual(['CCA-E0130']);
});

test("while the mirror lists, reads go to the store at once: a pod's first requests do not wait for a large cluster's listing", async () => {
  const store = new MemoryStore();
  opened.push(store);
  await store.put('a/1', 'x');
  // The listing hangs (a large cluster's first page) until released.
  let release = () => {};
  const listed = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const slow = new Proxy(store, {
    get(target, prop) {
      if (prop === 'range') {
        return async (req: RangeRequest) => {
          if (first) {
            first = false;
            await listed;
          }
          return target.range(req);
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  const ways = new Map<MirrorReadWay, number>();
  const mirror = new StoreMirror(slow, { prefixes: ['a/'], catchUpMs: 60_000, onRead: (w) => ways.set(w, (ways.get(w) ?? 0) + 1) }).start();
  opened.push(mirror);
  expect(mirror.status().state).toBe('loading');
  expect((await mirror.consistent(store).get('a/1'))?.value).toBe('x');
  expect((await mirror.reads(store).get('a/1'))?.value).toBe('x');
  expect(ways.get('store-not-ready')).toBe(2);
  release();
  await expect.poll(() => mirror.status().state).toBe('live');
  expect((await mirror.reads(store).get('a/1'))?.value).toBe('x');
  expect(ways.get('mirror')).toBe(1);
});
