import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { waitFor } from '../support/wait.js';
import type { KeyValue, Store, WatchBatch } from '../../db/store.js';
import { limits } from '../../db/keyspace.js';

export interface Backend {
  name: string;
  /** A fresh, empty store. */
  open(): Promise<Store>;
}

export async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (isCcaError(e)) return e.code;
    throw e;
  }
  return 'no error';
}

/** Collect watch batches until one at or beyond `untilRevision` arrives. */
export async function collect(
  store: Store,
  req: Parameters<Store['watch']>[0],
  untilRevision: number,
  timeoutMs = 10_000,
): Promise<WatchBatch[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  const out: WatchBatch[] = [];
  try {
    for await (const b of store.watch({ ...req, signal: ac.signal })) {
      out.push(b);
      if (b.revision >= untilRevision) break;
    }
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return out;
}

const kv = (key: string, value: string, createRevision: number, modRevision: number, version: number, lease = 0): KeyValue => ({
  key,
  value,
  createRevision,
  modRevision,
  version,
  lease,
});

/** Exact etcd v3 semantics, case by case. Every backend runs this unchanged. */
export function defineConformance(backend: Backend): void {
  describe(`Store conformance: ${backend.name}`, () => {
    let s: Store;
    beforeEach(async () => {
      s = await backend.open();
    });
    afterEach(async () => {
      await s.close();
    });

    test('an empty store is at revision 1 and holds nothing', async () => {
      expect(await s.revision()).toBe(1);
      expect(await s.get('a')).toBeNull();
      expect(await s.range({ prefix: '' })).toEqual({ kvs: [], count: 0, more: false, revision: 1 });
    });

    test('put creates, then versions; create revision stays', async () => {
      expect(await s.put('a', '1')).toEqual({ revision: 2 });
      expect(await s.get('a')).toEqual(kv('a', '1', 2, 2, 1));
      expect(await s.put('a', '2', { prevKv: true })).toEqual({ revision: 3, prevKv: kv('a', '1', 2, 2, 1) });
      expect(await s.get('a')).toEqual(kv('a', '2', 2, 3, 2));
      expect(await s.revision()).toBe(3);
    });

    test('a put of the same value and lease writes nothing (idempotent put)', async () => {
      await s.put('a', '1');
      expect(await s.put('a', '1')).toEqual({ revision: 2 });
      expect(await s.put('a', '1', { prevKv: true })).toEqual({ revision: 2, prevKv: kv('a', '1', 2, 2, 1) });
      expect(await s.revision()).toBe(2);
      const { id } = await s.grantLease(60);
      expect((await s.put('a', '1', { lease: id })).revision).toBe(3);
      expect(await s.get('a')).toEqual(kv('a', '1', 2, 3, 2, id));
      // Without a lease the put detaches it: that is a change.
      expect((await s.put('a', '1')).revision).toBe(4);
    });

    test('delete bumps once, a delete of nothing does not, and version restarts', async () => {
      await s.put('a', '1');
      await s.put('a', '2');
      expect(await s.delete('a', { prevKv: true })).toEqual({ revision: 4, deleted: 1, prevKvs: [kv('a', '2', 2, 3, 2)] });
      expect(await s.delete('a')).toEqual({ revision: 4, deleted: 0 });
      expect(await s.get('a')).toBeNull();
      await s.put('a', '3');
      expect(await s.get('a')).toEqual(kv('a', '3', 5, 5, 1));
    });

    test('prefix delete removes every key under the prefix in one revision', async () => {
      for (const k of ['a', 'a/1', 'a/2', 'ab', 'b']) await s.put(k, k);
      const r = await s.delete('a/', { prefix: true, prevKv: true });
      expect(r.revision).toBe(7);
      expect(r.deleted).toBe(2);
      expect(r.prevKvs!.map((x) => x.key)).toEqual(['a/1', 'a/2']);
      expect((await s.range({ prefix: '' })).kvs.map((x) => x.key)).toEqual(['a', 'ab', 'b']);
    });

    test('ranges: key, prefix, start/end, limit, more, count, reverse, keysOnly, countOnly', async () => {
      for (const k of ['a', 'b/1', 'b/2', 'b/3', 'c']) await s.put(k, `v-${k}`);
      expect((await s.range({ key: 'b/2' })).kvs).toEqual([kv('b/2', 'v-b/2', 4, 4, 1)]);
      expect((await s.range({ key: 'b' })).count).toBe(0);
      const p = await s.range({ prefix: 'b/' });
      expect(p.kvs.map((x) => x.key)).toEqual(['b/1', 'b/2', 'b/3']);
      expect([p.count, p.more, p.revision]).toEqual([3, false, 6]);
      const lim = await s.range({ prefix: 'b/', limit: 2 });
      expect(lim.kvs.map((x) => x.key)).toEqual(['b/1', 'b/2']);
      expect([lim.count, lim.more]).toEqual([3, true]);
      const rev = await s.range({ prefix: 'b/', limit: 2, reverse: true });
      expect(rev.kvs.map((x) => x.key)).toEqual(['b/3', 'b/2']);
      expect((await s.range({ start: 'b/2', end: 'c' })).kvs.map((x) => x.key)).toEqual(['b/2', 'b/3']);
      expect((await s.range({ start: 'b/3' })).kvs.map((x) => x.key)).toEqual(['b/3', 'c']);
      expect((await s.range({ start: 'b', end: 'b' })).count).toBe(0);
      const ko = await s.range({ prefix: 'b/', keysOnly: true, limit: 1 });
      expect(ko.kvs).toEqual([{ ...kv('b/1', '', 3, 3, 1) }]);
      expect(await s.range({ prefix: '', countOnly: true, limit: 1 })).toEqual({ kvs: [], count: 5, more: false, revision: 6 });
    });

    test('reads at past revisions see the state as it was', async () => {
      await s.put('a', '1'); // 2
      await s.put('b', '1'); // 3
      await s.put('a', '2'); // 4
      await s.delete('b'); // 5
      expect(await s.get('a', { revision: 2 })).toEqual(kv('a', '1', 2, 2, 1));
      expect(await s.get('a', { revision: 1 })).toBeNull();
      expect((await s.range({ prefix: '', revision: 3 })).kvs).toEqual([kv('a', '1', 2, 2, 1), kv('b', '1', 3, 3, 1)]);
      expect((await s.range({ prefix: '', revision: 5 })).kvs).toEqual([kv('a', '2', 2, 4, 2)]);
      const past = await s.range({ prefix: '', revision: 4, limit: 1, reverse: true });
      expect(past.kvs.map((x) => x.key)).toEqual(['b']);
      expect([past.count, past.more, past.revision]).toEqual([2, true, 5]);
      expect(await codeOf(s.range({ prefix: '', revision: 6 }))).toBe('CCA-E0102');
    });

    test('keys sort by UTF-8 bytes, as etcd does', async () => {
      const keys = ['k/\uFFFD', 'k/😀', 'k/z', 'k/é', 'k/Z'];
      for (const k of keys) await s.put(k, '1');
      expect((await s.range({ prefix: 'k/' })).kvs.map((x) => x.key)).toEqual(['k/Z', 'k/z', 'k/é', 'k/\uFFFD', 'k/😀']);
      expect((await s.range({ prefix: 'k/\uFFFD' })).kvs.map((x) => x.key)).toEqual(['k/\uFFFD']);
    });

    test('txn compares every target with every operator, etcd-style on missing keys', async () => {
      await s.put('a', 'm'); // rev 2, version 1
      const t = async (c: Parameters<Store['txn']>[0]['compare'][number]) =>
        (await s.txn({ compare: [c], success: [] })).succeeded;
      expect(await t({ key: 'a', target: 'value', op: '=', value: 'm' })).toBe(true);
      expect(await t({ key: 'a', target: 'value', op: '<', value: 'n' })).toBe(true);
      expect(await t({ key: 'a', target: 'value', op: '>', value: 'l' })).toBe(true);
      expect(await t({ key: 'a', target: 'value', op: '!=', value: 'm' })).toBe(false);
      expect(await t({ key: 'a', target: 'version', op: '=', value: 1 })).toBe(true);
      expect(await t({ key: 'a', target: 'createRevision', op: '>', value: 1 })).toBe(true);
      expect(await t({ key: 'a', target: 'modRevision', op: '<', value: 2 })).toBe(false);
      expect(await t({ key: 'a', target: 'lease', op: '=', value: 0 })).toBe(true);
      // A missing key: value compares always fail; the rest compare against zeros.
      expect(await t({ key: 'x', target: 'value', op: '!=', value: 'anything' })).toBe(false);
      expect(await t({ key: 'x', target: 'version', op: '=', value: 0 })).toBe(true);
      expect(await t({ key: 'x', target: 'createRevision', op: '=', value: 0 })).toBe(true);
      expect(await t({ key: 'x', target: 'modRevision', op: '<', value: 1 })).toBe(true);
      expect(await s.revision()).toBe(2);
    });

    test('txn takes one branch, commits it in one revision, and ranges see its earlier writes', async () => {
      await s.put('a', '1'); // 2
      await s.put('c', '1'); // 3
      const r = await s.txn({
        compare: [{ key: 'a', target: 'modRevision', op: '=', value: 2 }],
        success: [
          { put: { key: 'b', value: 'x' } },
          { put: { key: 'a', value: '2', prevKv: true } },
          { range: { prefix: '' } },
          { delete: { key: 'c' } },
          { range: { key: 'c' } },
          { range: { prefix: '', revision: 3, keysOnly: true } },
        ],
        failure: [{ put: { key: 'lost', value: '1' } }],
      });
      expect(r.succeeded).toBe(true);
      expect(r.revision).toBe(4);
      expect(r.responses).toEqual([
        { put: {} },
        { put: { prevKv: kv('a', '1', 2, 2, 1) } },
        { range: { kvs: [kv('a', '2', 2, 4, 2), kv('b', 'x', 4, 4, 1), kv('c', '1', 3, 3, 1)], count: 3, more: false } },
        { delete: { deleted: 1 } },
        { range: { kvs: [], count: 0, more: false } },
        { range: { kvs: [kv('a', '', 2, 2, 1), kv('c', '', 3, 3, 1)], count: 2, more: false } },
      ]);
      const f = await s.txn({
        compare: [{ key: 'a', target: 'version', op: '=', value: 1 }],
        success: [{ put: { key: 'won', value: '1' } }],
        failure: [{ range: { key: 'a' } }],
      });
      expect(f.succeeded).toBe(false);
      expect(f.revision).toBe(4);
      expect(await s.get('won')).toBeNull();
      expect(await s.get('lost')).toBeNull();
    });

    test('a txn whose branch changes nothing does not bump the revision', async () => {
      await s.put('a', '1');
      const r = await s.txn({ compare: [], success: [{ put: { key: 'a', value: '1' } }, { delete: { key: 'zz' } }] });
      expect(r).toEqual({ succeeded: true, revision: 2, responses: [{ put: {} }, { delete: { deleted: 0 } }] });
      expect(await s.revision()).toBe(2);
    });

    test('bad requests are coded errors and change nothing', async () => {
      expect(await codeOf(() => s.put('', 'x'))).toBe('CCA-E0103');
      expect(await codeOf(() => s.put('a\u0000b', 'x'))).toBe('CCA-E0103');
      expect(await codeOf(() => s.put('a', 'x\u0000'))).toBe('CCA-E0105');
      expect(await codeOf(() => s.put('a', 'x'.repeat(1_572_865)))).toBe('CCA-E0104');
      expect(await codeOf(() => s.put('k'.repeat(2049), 'x'))).toBe('CCA-E0103');
      expect(await codeOf(() => s.range({ start: 'b', end: 'a' }))).toBe('CCA-E0106');
      expect(await codeOf(() => s.range({}))).toBe('CCA-E0106');
      expect(await codeOf(() => s.put('a', 'x', { lease: 12345 }))).toBe('CCA-E0107');
      const many = Array.from({ length: 129 }, (_, i) => ({ put: { key: `k${i}`, value: '1' } }));
      expect(await codeOf(() => s.txn({ compare: [], success: many }))).toBe('CCA-E0109');
      expect(
        await codeOf(() => s.txn({ compare: [], success: [{ put: { key: 'a', value: '1' } }, { put: { key: 'a', value: '2' } }] })),
      ).toBe('CCA-E0110');
      expect(
        await codeOf(() =>
          s.txn({ compare: [], success: [{ delete: { key: 'a', prefix: true } }, { put: { key: 'a/b', value: '2' } }] }),
        ),
      ).toBe('CCA-E0110');
      expect(
        await codeOf(() => s.txn({ compare: [{ key: 'a', target: 'version', op: '=', value: 'x' }], success: [] })),
      ).toBe('CCA-E0114');
      expect(await s.revision()).toBe(1);
      expect((await s.range({ prefix: '' })).count).toBe(0);
    });

    test('watch delivers every event from a past revision, grouped per revision, in order', async () => {
      await s.put('a', '1'); // 2
      await s.txn({ compare: [], success: [{ put: { key: 'b', value: '1' } }, { put: { key: 'c', value: '1' } }] }); // 3
      await s.delete('a'); // 4
      await s.put('x', '1'); // 5
      const all = await collect(s, { prefix: '', fromRevision: 2, prevKv: true }, 5);
      expect(all).toEqual([
        { revision: 2, events: [{ type: 'put', kv: kv('a', '1', 2, 2, 1) }] },
        {
          revision: 3,
          events: [
            { type: 'put', kv: kv('b', '1', 3, 3, 1) },
            { type: 'put', kv: kv('c', '1', 3, 3, 1) },
          ],
        },
        { revision: 4, events: [{ type: 'delete', kv: kv('a', '', 0, 4, 0), prevKv: kv('a', '1', 2, 2, 1) }] },
        { revision: 5, events: [{ type: 'put', kv: kv('x', '1', 5, 5, 1) }] },
      ]);
      const one = await collect(s, { key: 'a', fromRevision: 3 }, 4);
      expect(one).toEqual([{ revision: 4, events: [{ type: 'delete', kv: kv('a', '', 0, 4, 0) }] }]);
    });

    test('watch follows live writes after catching up, filtered by prefix', async () => {
      await s.put('p/1', 'old');
      const got = collect(s, { prefix: 'p/', fromRevision: 2 }, 6);
      await s.put('q/1', 'other');
      await s.put('p/2', 'new');
      await s.put('p/1', 'newer');
      await s.delete('p/', { prefix: true });
      const batches = await got;
      expect(batches.map((b) => [b.revision, b.events.map((e) => `${e.type}:${e.kv.key}`)])).toEqual([
        [2, ['put:p/1']],
        [4, ['put:p/2']],
        [5, ['put:p/1']],
        [6, ['delete:p/1', 'delete:p/2']],
      ]);
    });

    test('watch without a start revision begins after the current one', async () => {
      await s.put('a', '1');
      const got = collect(s, { prefix: '' }, 3);
      await s.put('a', '2');
      expect((await got).map((b) => b.revision)).toEqual([3]);
    });

    test('compaction: reads and watches before it fail with the compact revision; at it they work', async () => {
      await s.put('a', '1'); // 2
      await s.put('a', '2'); // 3
      await s.put('b', '1'); // 4
      await s.delete('b'); // 5
      await s.put('a', '3'); // 6
      await s.compact(5);
      const err = await s.range({ prefix: '', revision: 4 }).catch((e: unknown) => e);
      expect(isCcaError(err, 'CCA-E0101')).toBe(true);
      expect((err as { diagnostic: { params: { compactRevision: number } } }).diagnostic.params.compactRevision).toBe(5);
      expect((await s.range({ prefix: '', revision: 5 })).kvs).toEqual([kv('a', '2', 2, 3, 2)]);
      expect((await s.range({ prefix: '', revision: 6 })).kvs).toEqual([kv('a', '3', 2, 6, 3)]);
      expect(await codeOf(collect(s, { prefix: '', fromRevision: 4 }, 6))).toBe('CCA-E0101');
      const from5 = await collect(s, { prefix: '', fromRevision: 5, prevKv: true }, 6);
      expect(from5).toEqual([
        { revision: 5, events: [{ type: 'delete', kv: kv('b', '', 0, 5, 0), prevKv: kv('b', '1', 4, 4, 1) }] },
        { revision: 6, events: [{ type: 'put', kv: kv('a', '3', 2, 6, 3), prevKv: kv('a', '2', 2, 3, 2) }] },
      ]);
      expect(await codeOf(s.compact(5))).toBe('CCA-E0101');
      expect(await codeOf(s.compact(4))).toBe('CCA-E0101');
      expect(await codeOf(s.compact(7))).toBe('CCA-E0102');
      await s.compact(6);
      expect((await s.range({ prefix: '' })).kvs).toEqual([kv('a', '3', 2, 6, 3)]);
    });

    test('a txn reading the past fails on its first unservable range: compacted before future, future before compacted', async () => {
      for (let i = 0; i < 5; i++) await s.put('a', String(i)); // 2..6
      await s.compact(4);
      const read = (revision: number) => ({ range: { key: 'a', revision } });
      const txn = (...revisions: number[]) => s.txn({ compare: [], success: revisions.map(read) });
      expect(await codeOf(txn(3, 9))).toBe('CCA-E0101');
      expect(await codeOf(txn(9, 3))).toBe('CCA-E0102');
      expect((await s.txn({ compare: [], success: [read(4), read(6)] })).responses.map((r) => ('range' in r ? r.range.kvs[0]?.value : ''))).toEqual(['2', '4']);
    });

    test('leases: grant, attach, time to live, keepalive, revoke deletes attached keys in one revision', async () => {
      const { id, ttl } = await s.grantLease(30);
      expect(ttl).toBe(30);
      expect(await s.leases()).toEqual([{ id }]);
      await s.put('l/1', 'x', { lease: id }); // 2
      await s.put('l/2', 'x', { lease: id }); // 3
      await s.put('keep', 'x'); // 4
      const t = await s.leaseTimeToLive(id);
      expect(t.grantedTtl).toBe(30);
      expect(t.ttl).toBeGreaterThanOrEqual(28);
      expect(t.ttl).toBeLessThanOrEqual(30);
      expect(t.keys).toEqual(['l/1', 'l/2']);
      expect(await s.keepAlive(id)).toEqual({ ttl: 30 });
      expect(await s.revokeLease(id)).toEqual({ revision: 5 });
      expect((await s.range({ prefix: '' })).kvs.map((x) => x.key)).toEqual(['keep']);
      const w = await collect(s, { prefix: 'l/', fromRevision: 5 }, 5);
      expect(w[0]!.events.map((e) => `${e.type}:${e.kv.key}`)).toEqual(['delete:l/1', 'delete:l/2']);
      expect(await codeOf(s.keepAlive(id))).toBe('CCA-E0107');
      expect(await codeOf(s.revokeLease(id))).toBe('CCA-E0107');
      expect(await s.leaseTimeToLive(id)).toEqual({ ttl: -1, grantedTtl: 0, keys: [] });
      expect(await s.leases()).toEqual([]);
      // A lease without keys goes without a revision.
      const empty = await s.grantLease(30);
      expect(await s.revokeLease(empty.id)).toEqual({ revision: 5 });
      expect(await codeOf(s.grantLease(0))).toBe('CCA-E0108');
    });

    test('getMany reads several keys at one revision, in the order asked, null for an absent one', async () => {
      await s.put('gm/a', '1');
      await s.put('gm/b', '2');
      await s.put('gm/b', '3');
      const got = await s.getMany(['gm/b', 'gm/none', 'gm/a', 'gm/b']);
      expect(got.map((kv) => kv?.value ?? null)).toEqual(['3', null, '1', '3']);
      expect(got[0]).toEqual(await s.get('gm/b'));
      expect(got[2]).toEqual(await s.get('gm/a'));
      expect(await s.getMany([])).toEqual([]);
      const head = await s.revision();
      await s.getMany(['gm/a']);
      expect(await s.revision()).toBe(head); // a read burns no revision
      expect(await codeOf(s.getMany(Array.from({ length: limits.maxTxnOps + 1 }, (_, i) => `gm/${i}`)))).toBe('CCA-E0109');
      expect(await codeOf(s.getMany(['x'.repeat(limits.maxKeyBytes + 1)]))).toBe('CCA-E0103');
    });

    test('leasesTimeToLive reads several leases at once, in the order asked, as leaseTimeToLive does each', async () => {
      const a = await s.grantLease(30);
      const b = await s.grantLease(90);
      const gone = await s.grantLease(30);
      await s.revokeLease(gone.id);
      const asked = [b.id, 987_654_321, a.id, gone.id, b.id];
      const got = await s.leasesTimeToLive(asked);
      expect(got.map((t) => t.grantedTtl)).toEqual([90, 0, 30, 0, 90]);
      expect(got.map((t) => t.ttl < 0)).toEqual([false, true, false, true, false]);
      for (const [i, id] of asked.entries()) {
        const one = await s.leaseTimeToLive(id);
        expect(got[i]!.grantedTtl).toBe(one.grantedTtl);
        // Read a moment apart: a second may have gone by.
        expect(Math.abs(got[i]!.ttl - one.ttl)).toBeLessThanOrEqual(1);
      }
      expect(await s.leasesTimeToLive([])).toEqual([]);
      expect(await codeOf(s.leasesTimeToLive(Array.from({ length: limits.maxLeasesPerRead + 1 }, (_, i) => i + 1)))).toBe('CCA-E0128');
      await s.revokeLease(a.id);
      await s.revokeLease(b.id);
    });

    test('moving a key to another lease detaches it from the first', async () => {
      const a = await s.grantLease(30);
      const b = await s.grantLease(30);
      await s.put('k', 'x', { lease: a.id });
      await s.put('k', 'x', { lease: b.id });
      expect((await s.leaseTimeToLive(a.id)).keys).toEqual([]);
      await s.revokeLease(a.id);
      expect(await s.get('k')).not.toBeNull();
      await s.revokeLease(b.id);
      expect(await s.get('k')).toBeNull();
    });

    test('lease expiry deletes the attached keys in one revision', async () => {
      const { id } = await s.grantLease(1);
      await s.put('e/1', 'x', { lease: id }); // 2
      await s.put('e/2', 'x', { lease: id }); // 3
      const gone = await waitFor('the lease\'s keys under e/ expired', () => s.range({ prefix: 'e/' }), (r) => r.count === 0, 8_000);
      expect(gone.count).toBe(0);
      expect(gone.revision).toBe(4);
      const w = await collect(s, { prefix: '', fromRevision: 4 }, 4);
      expect(w).toEqual([
        {
          revision: 4,
          events: [
            { type: 'delete', kv: kv('e/1', '', 0, 4, 0) },
            { type: 'delete', kv: kv('e/2', '', 0, 4, 0) },
          ],
        },
      ]);
      expect(await codeOf(s.keepAlive(id))).toBe('CCA-E0107');
      expect(await s.leaseTimeToLive(id)).toEqual({ ttl: -1, grantedTtl: 0, keys: [] });
    });

    test('concurrent writers and watchers: ordered, gap-free, complete, each event once', async () => {
      const start = await s.revision();
      const watchers = [0, 1, 2].map(() => {
        const got: WatchBatch[] = [];
        const ac = new AbortController();
        const done = (async () => {
          for await (const b of s.watch({ prefix: 'c/', fromRevision: start + 1, signal: ac.signal })) got.push(b);
        })();
        return { got, ac, done };
      });
      const writers = 8;
      const perWriter = 40;
      const results = await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const mine: { revision: number; key: string; value: string }[] = [];
          for (let i = 0; i < perWriter; i++) {
            const key = `c/${w}/${i % 5}`;
            const value = `${w}-${i}`;
            if (i % 3 === 0) {
              const cur = await s.get(key);
              const r = await s.txn({
                compare: [{ key, target: 'modRevision', op: '=', value: cur?.modRevision ?? 0 }],
                success: [{ put: { key, value } }],
              });
              // Only this writer touches its keys, so the compare must hold.
              expect(r.succeeded).toBe(true);
              mine.push({ revision: r.revision, key, value });
            } else {
              const r = await s.put(key, value);
              mine.push({ revision: r.revision, key, value });
            }
          }
          return mine;
        }),
      );
      const end = await s.revision();
      expect(end - start).toBe(writers * perWriter);
      const expected = new Map(results.flat().map((r) => [r.revision, r]));
      expect(expected.size).toBe(writers * perWriter);
      for (const w of watchers) {
        await waitFor('every event of the range delivered', async () => w.got.length, (n) => n >= end - start, 10_000);
        w.ac.abort();
        await w.done;
        expect(w.got.map((b) => b.revision)).toEqual(Array.from({ length: end - start }, (_, i) => start + 1 + i));
        for (const b of w.got) {
          const want = expected.get(b.revision)!;
          expect(b.events.map((e) => [e.kv.key, e.kv.value])).toEqual([[want.key, want.value]]);
        }
      }
    });
  });
}
