import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { openStore } from '../../db/index.js';
import { EtcdStore, parseEtcdUrl } from '../../db/etcd/store.js';
import type { Store, WatchBatch } from '../../db/store.js';
import { startTestEtcd, type RunningEtcd } from '../support/etcd-server.js';
import { freePort } from '../support/postgres-server.js';
import { codeOf, collect } from './conformance.js';

/** What only EtcdStore has: prefixes sharing one etcd, its URL, etcd's TTL floor, restarts. */

describe('etcd URLs', () => {
  test('host, several hosts, credentials and the prefix', () => {
    expect(parseEtcdUrl('etcd://127.0.0.1:2379/some/prefix')).toEqual({ hosts: ['http://127.0.0.1:2379'], prefix: '/some/prefix/' });
    expect(parseEtcdUrl('etcd://a:1,b:2/p/')).toEqual({ hosts: ['http://a:1', 'http://b:2'], prefix: '/p/' });
    expect(parseEtcdUrl('etcd://u:p%40ss@a:1/x%20y')).toEqual({
      hosts: ['http://a:1'],
      prefix: '/x y/',
      auth: { username: 'u', password: 'p@ss' },
    });
    expect(parseEtcdUrl('etcd://a:1')).toEqual({ hosts: ['http://a:1'], prefix: '' });
    expect(() => parseEtcdUrl('etcd:///p')).toThrow(/CCA-E0116/);
  });

  test('without an etcd binary the test harness says so with a code', async () => {
    const saved = { bin: process.env.ETCD_BINARY, endpoints: process.env.ETCD_ENDPOINTS };
    process.env.ETCD_BINARY = '/nonexistent/etcd';
    delete process.env.ETCD_ENDPOINTS;
    try {
      expect(await codeOf(startTestEtcd())).toBe('CCA-E0119');
    } finally {
      if (saved.bin === undefined) delete process.env.ETCD_BINARY;
      else process.env.ETCD_BINARY = saved.bin;
      if (saved.endpoints !== undefined) process.env.ETCD_ENDPOINTS = saved.endpoints;
    }
  });

  test('an etcd nobody listens on is a coded environment error', async () => {
    const port = await freePort();
    const err = await openStore(`etcd://127.0.0.1:${port}/x`, { etcd: { dialTimeoutMs: 500, callTimeoutMs: 1_000 } }).catch((e: unknown) => e);
    expect(isCcaError(err, 'CCA-E0111')).toBe(true);
  });
});

describe('EtcdStore on a shared etcd', () => {
  let etcd: RunningEtcd;
  let raw: Etcd3;
  let a: Store;
  let b: Store;
  beforeAll(async () => {
    etcd = await startTestEtcd({ fresh: true });
    raw = new Etcd3({ hosts: etcd.endpoints });
    // '/t1' and '/t10' would overlap as raw prefixes; the store terminates them with '/'.
    a = await openStore(`etcd://${etcd.hostPort}/t1`);
    b = await openStore(`etcd://${etcd.hostPort}/t10`);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    raw?.close();
    await etcd?.stop();
  });

  test('keys live under the prefix and never cross to another', async () => {
    await a.put('0/x', 'a');
    await b.put('x', 'b');
    expect((await raw.getAll().prefix('/t1').keys()).sort()).toEqual(['/t1/0/x', '/t10/x']);
    expect((await a.range({ prefix: '' })).kvs.map((kv) => kv.key)).toEqual(['0/x']);
    expect((await b.range({ start: '' })).kvs.map((kv) => kv.key)).toEqual(['x']);
    expect((await a.range({ start: '0', end: 'zzz' })).count).toBe(1);
    expect((await a.delete('', { prefix: true })).deleted).toBe(1);
    expect(await b.get('x')).not.toBeNull();
  });

  test('watches and leases stay inside the prefix', async () => {
    const start = (await a.revision()) + 1;
    const got = collect(a, { prefix: '', fromRevision: start, prevKv: true }, Number.MAX_SAFE_INTEGER, 1_500);
    const la = await a.grantLease(60);
    const lb = await b.grantLease(60);
    await b.put('w', '1', { lease: lb.id });
    await a.put('w', '1', { lease: la.id });
    const batches: WatchBatch[] = await got;
    expect(batches.flatMap((x) => x.events.map((e) => e.kv.key))).toEqual(['w']);
    expect((await a.leases()).map((l) => l.id)).toEqual([la.id]);
    expect((await b.leases()).map((l) => l.id)).toEqual([lb.id]);
    expect((await a.leaseTimeToLive(la.id)).keys).toEqual(['w']);
    // Another prefix's lease is unknown here, as a never-granted one would be.
    expect(await codeOf(a.put('v', '1', { lease: lb.id }))).toBe('CCA-E0107');
    expect(await codeOf(a.keepAlive(lb.id))).toBe('CCA-E0107');
    expect(await codeOf(a.revokeLease(lb.id))).toBe('CCA-E0107');
    expect(await a.leaseTimeToLive(lb.id)).toEqual({ ttl: -1, grantedTtl: 0, keys: [] });
    // Lease ids are safe integers chosen by the store.
    expect(Number.isSafeInteger(la.id) && la.id > 0).toBe(true);
    await a.revokeLease(la.id);
    expect(await b.get('w')).not.toBeNull();
    await b.revokeLease(lb.id);
  });

  test('revisions are etcd-wide and compaction is cluster-wide', async () => {
    const r0 = await a.revision();
    await b.put('y', '1');
    expect(await a.revision()).toBe(r0 + 1);
    await b.put('y', '2');
    await a.compact(await a.revision());
    // b never compacted, yet its history before a's compaction is gone.
    expect(await codeOf(b.get('y', { revision: r0 + 1 }))).toBe('CCA-E0101');
    expect((await b.get('y'))!.value).toBe('2');
  });

  test('a watch without a start revision sees nothing from before the call, and misses nothing after', async () => {
    await b.put('busy', '1'); // a has not seen this revision
    const it = a.watch({ prefix: '' });
    const first = (async () => {
      for await (const batch of it) return batch;
      return undefined;
    })();
    const { revision } = await a.put('after', '1');
    expect((await first)?.revision).toBe(revision);
  });
});

describe('a watch from "now" on a store that has been idle', () => {
  test('does not fail when what it last saw was compacted meanwhile', async () => {
    const etcd = await startTestEtcd({ fresh: true });
    const idle = await openStore(`etcd://${etcd.hostPort}/idle`);
    const busy = await openStore(`etcd://${etcd.hostPort}/busy`);
    try {
      for (let i = 0; i < 5; i++) await busy.put('k', String(i));
      await busy.compact(await busy.revision());
      const it = idle.watch({ prefix: '' });
      const first = (async () => {
        for await (const batch of it) return batch;
        return undefined;
      })();
      const { revision } = await idle.put('x', '1');
      expect((await first)?.revision).toBe(revision);
    } finally {
      await idle.close();
      await busy.close();
      await etcd.stop();
    }
  });
});

describe('watch catch-up', () => {
  test('more revisions than etcd sends in one response, to a slow consumer: all, in order, once', async () => {
    const etcd = await startTestEtcd({ fresh: true });
    const s = await openStore(`etcd://${etcd.hostPort}/catchup`);
    try {
      const n = 1_500; // etcd sends at most 1,000 revisions per catch-up response
      for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => s.put(`k/${(i + j) % 7}`, String(i + j))));
      }
      const end = await s.revision();
      const seen: number[] = [];
      for await (const b of s.watch({ prefix: 'k/', fromRevision: 2, signal: AbortSignal.timeout(30_000) })) {
        seen.push(b.revision);
        if (seen.length % 200 === 0) await new Promise((r) => setTimeout(r, 20)); // let the buffer fill
        if (b.revision >= end) break;
      }
      expect(seen).toEqual(Array.from({ length: n }, (_, i) => i + 2));
    } finally {
      await s.close();
      await etcd.stop();
    }
  });
});

describe('etcd specifics', () => {
  test('etcd raises a TTL below its minimum; grantLease reports what was granted', async () => {
    const etcd = await startTestEtcd({ fresh: true, raft: 'default' });
    const s = await openStore(`etcd://${etcd.hostPort}/ttl`);
    try {
      const { id, ttl } = await s.grantLease(1);
      expect(ttl).toBe(2);
      expect((await s.leaseTimeToLive(id)).grantedTtl).toBe(2);
    } finally {
      await s.close();
      await etcd.stop();
    }
  });

  test('a request larger than etcd accepts is a coded error (CCA-E0121)', async () => {
    const etcd = await startTestEtcd({ fresh: true });
    const s = await openStore(`etcd://${etcd.hostPort}/big`);
    try {
      // Within the Store's value limit (1.5 MiB), but the request around it is larger than etcd's.
      expect(await codeOf(s.put('k', 'x'.repeat(1_572_864)))).toBe('CCA-E0121');
      expect(await s.revision()).toBe(1);
    } finally {
      await s.close();
      await etcd.stop();
    }
  });

  test('a watch survives an etcd restart: nothing lost, nothing doubled', async () => {
    const etcd = await startTestEtcd({ fresh: true });
    const s = (await EtcdStore.open(`etcd://${etcd.hostPort}/restart`)) as Store;
    try {
      await s.put('k', '0'); // 2
      const got = collect(s, { prefix: '', fromRevision: 2 }, 6, 20_000);
      await s.put('k', '1'); // 3
      await etcd.restart!();
      let written = 0;
      for (let i = 2; written < 3; i++) {
        // The first writes after the restart may meet a client still reconnecting.
        const ok = await s.put('k', String(i)).then(
          () => true,
          (e: unknown) => (isCcaError(e, 'CCA-E0112') || isCcaError(e, 'CCA-E0111') ? false : Promise.reject(e)),
        );
        if (ok) written++;
        else await new Promise((r) => setTimeout(r, 100));
      }
      const batches = await got;
      expect(batches.map((x) => x.revision)).toEqual([2, 3, 4, 5, 6]);
    } finally {
      await s.close();
      await etcd.stop();
    }
  });
});
