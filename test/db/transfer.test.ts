import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openStore } from '../../db/index.js';
import { MemoryStore } from '../../db/memory.js';
import type { Store } from '../../db/store.js';
import { readSnapshotFile, writeSnapshotFile } from '../../db/transfer/file.js';
import { storeSource } from '../../db/transfer/read-store.js';
import { restoreInto } from '../../db/transfer/restore.js';
import { createTestDatabase } from '../support/databases.js';
import { startTestEtcd, type RunningEtcd } from '../support/etcd-server.js';
import { codeOf } from './conformance.js';

/**
 * Snapshots and copies between backends: every key and value equal at the end, keys on a
 * lease attached to a re-granted lease with the same TTL, and a damaged file refused
 * before anything is written. A memory store has no URL another process could reach, so
 * every copy goes through the same functions `cca store` calls, in-process.
 */

let dir: string;
let etcd: RunningEtcd;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cca-transfer-'));
  etcd = await startTestEtcd({ fresh: true });
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await etcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function open(url: string): Promise<Store> {
  const s = await openStore(url);
  cleanups.push(() => s.close());
  return s;
}

/** Every key with its value and its lease's granted TTL and lease-mates (ids differ between stores). */
async function dump(s: Store): Promise<Map<string, { value: string; ttl?: number; mates?: string }>> {
  const kvs = (await s.range({ prefix: '' })).kvs;
  const byLease = new Map<number, string[]>();
  for (const kv of kvs) if (kv.lease) byLease.set(kv.lease, [...(byLease.get(kv.lease) ?? []), kv.key]);
  const out = new Map<string, { value: string; ttl?: number; mates?: string }>();
  for (const kv of kvs) {
    if (!kv.lease) out.set(kv.key, { value: kv.value });
    else out.set(kv.key, { value: kv.value, ttl: (await s.leaseTimeToLive(kv.lease)).grantedTtl, mates: byLease.get(kv.lease)!.join(',') });
  }
  return out;
}

/** 1,203 keys (more than two pages), some deleted and rewritten, 40 on two leases, a value with multi-byte text. */
async function fill(s: Store): Promise<void> {
  const a = (await s.grantLease(120)).id;
  const b = (await s.grantLease(300)).id;
  for (let i = 0; i < 1200; i += 100) {
    await s.txn({ compare: [], success: Array.from({ length: 100 }, (_, j) => ({ put: { key: `/k/${String(i + j).padStart(5, '0')}`, value: JSON.stringify({ i: i + j }) } })) });
  }
  await s.delete('/k/000', { prefix: true }); // /k/00000…/k/00099
  await s.put('/k/00007', 'back again');
  for (let i = 0; i < 40; i++) await s.put(`/leased/${i}`, `v${i}`, { lease: i % 2 ? a : b });
  await s.put('/ünïcode/😀', 'välue ✓');
  await s.put('/empty', '');
}

test('a copy memory → SQLite → Postgres → etcd → memory keeps every key, value and lease', async () => {
  const db = await createTestDatabase('transfer');
  cleanups.push(db.drop);
  const chain: Store[] = [
    new MemoryStore(),
    await open(`sqlite:${path.join(dir, 'chain.db')}`),
    await open(db.url),
    await open(`etcd://${etcd.hostPort}/transfer/chain`),
    new MemoryStore(),
  ];
  await fill(chain[0]!);
  const want = await dump(chain[0]!);
  expect(want.size).toBe(1200 - 100 + 1 + 40 + 2);
  for (let i = 1; i < chain.length; i++) {
    const seen: number[] = [];
    const source = await storeSource(chain[i - 1]!, 300);
    const r = await restoreInto(chain[i]!, source, { target: `store ${i}`, progress: (done) => seen.push(done) });
    expect(r).toMatchObject({ keys: want.size, leases: 2 });
    expect(seen.at(-1)).toBe(want.size);
    expect(await dump(chain[i]!), `after copy ${i}`).toEqual(want);
    expect((await chain[i]!.leases()).length).toBe(2);
  }
  for (const s of [chain[0]!, chain[4]!]) await s.close();
});

test('a snapshot file from Postgres restores into SQLite; a second restore into it is refused unless --overwrite', async () => {
  const db = await createTestDatabase('snapshot');
  cleanups.push(db.drop);
  const pg = await open(db.url);
  await fill(pg);
  const rev = await pg.revision();
  await pg.put('/k/00500', 'written last');
  const source = await storeSource(pg);
  expect(source.revision).toBe(rev + 1);
  const file = path.join(dir, 'pg.snap');
  const written = await writeSnapshotFile(source, file);
  expect(written).toEqual({ keys: source.keyCount, leases: 2 });
  const header = JSON.parse((await readFile(file, 'utf8')).split('\n')[0]!) as Record<string, unknown>;
  expect(header).toEqual({ format: 'ccattler-snapshot', version: 1, revision: rev + 1, keys: source.keyCount, leases: 2 });

  const target = await open(`sqlite:${path.join(dir, 'restored.db')}`);
  await restoreInto(target, await readSnapshotFile(file), { target: 'sqlite' });
  expect(await dump(target)).toEqual(await dump(pg));
  expect(await codeOf(restoreInto(target, await readSnapshotFile(file), { target: 'sqlite' }))).toBe('CCA-E0153');
  await target.put('/k/00500', 'changed on the target');
  await restoreInto(target, await readSnapshotFile(file), { target: 'sqlite', overwrite: true });
  expect((await target.get('/k/00500'))?.value).toBe('written last');
});

test('a damaged, cut-short, reordered or too-new snapshot is refused with a code before anything is written', async () => {
  const src = new MemoryStore();
  await fill(src);
  const file = path.join(dir, 'good.snap');
  await writeSnapshotFile(await storeSource(src), file);
  const text = await readFile(file, 'utf8');
  const lines = text.trimEnd().split('\n');
  const variants: [string, string, string][] = [
    ['one value changed', text.replace('"v":"v7"', '"v":"v8"'), 'CCA-E0154'],
    ['cut short', lines.slice(0, -5).join('\n') + '\n', 'CCA-E0154'],
    ['two keys swapped', [lines[0], ...lines.slice(1, 3), lines[4], lines[3], ...lines.slice(5)].join('\n') + '\n', 'CCA-E0154'],
    ['not JSON', text.replace('{"k"', '{k'), 'CCA-E0154'],
    ['a newer format', text.replace('"version":1', '"version":2'), 'CCA-E0155'],
    ['empty', '', 'CCA-E0154'],
  ];
  for (const [what, body, code] of variants) {
    const bad = path.join(dir, 'bad.snap');
    await writeFile(bad, body);
    expect(await codeOf(readSnapshotFile(bad)), what).toBe(code);
  }
  const dst = new MemoryStore();
  await restoreInto(dst, await readSnapshotFile(file), { target: 'memory' });
  expect(await dump(dst)).toEqual(await dump(src));
  await Promise.all([src.close(), dst.close()]);
});
