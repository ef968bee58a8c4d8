import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { openStore } from '../../db/index.js';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../db/sqlite/store.js';
import { codeOf, collect } from './conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'cca-sqlite-spec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('openStore understands sqlite:FILE and sqlite::memory:', async () => {
  const a = await openStore(`sqlite:${join(dir, 'open.db')}`);
  const m = await openStore('sqlite::memory:');
  expect(a).toBeInstanceOf(SqliteStore);
  expect((m as SqliteStore).path).toBe(':memory:');
  await a.put('k', 'v');
  await a.close();
  const again = await openStore(`sqlite:${join(dir, 'open.db')}`);
  expect((await again.get('k'))?.value).toBe('v');
  await Promise.all([again.close(), m.close()]);
});

test('two stores on one file: gap-free revisions, and each one watches the other’s writes', async () => {
  const file = `sqlite:${join(dir, 'two.db')}`;
  const [a, b] = [await SqliteStore.open(file), await SqliteStore.open(file)];
  const seen = collect(b, { prefix: 'x/', fromRevision: 2 }, 41);
  const revs = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).put(`x/${i}`, String(i)).then((r) => r.revision)));
  expect(revs.sort((p, q) => p - q)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
  expect((await seen).map((x) => x.revision)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
  await Promise.all([a.close(), b.close()]);
});

test('a write by another process reaches a watcher through the bounded poll (≤ 1 s)', async () => {
  const path = join(dir, 'proc.db');
  const store = await SqliteStore.open(`sqlite:${path}`);
  const seen = collect(store, { prefix: 'p/' }, 2, 10_000);
  const script = `import { SqliteStore } from ${JSON.stringify(new URL('../../db/sqlite/store.ts', import.meta.url).pathname)};
    const s = await SqliteStore.open(${JSON.stringify(`sqlite:${path}`)}); await s.put('p/1', 'from another process'); await s.close();`;
  const wrote = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: 'inherit' });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
  });
  const batches = await seen;
  expect(batches.map((x) => x.events.map((e) => e.kv.value))).toEqual([['from another process']]);
  expect(Date.now() - wrote).toBeLessThan(10_000);
  await store.close();
}, 20_000);

test('one driver per file: a second claim is CCA-E0125 until the first is released', async () => {
  const file = `sqlite:${join(dir, 'driver.db')}`;
  const [a, b] = [await SqliteStore.open(file), await SqliteStore.open(file)];
  const claim = a.claimDriver();
  expect(await codeOf(() => b.claimDriver())).toBe('CCA-E0125');
  claim.release();
  const second = b.claimDriver();
  expect(await codeOf(() => a.claimDriver())).toBe('CCA-E0125');
  second.release();
  await Promise.all([a.close(), b.close()]);
});

test('leases expire on the injected clock, deleting their keys in one revision', async () => {
  let now = 1_000_000;
  const s = await SqliteStore.open('sqlite::memory:', { now: () => now });
  const { id } = await s.grantLease(5);
  await s.put('l/1', 'a', { lease: id });
  await s.put('l/2', 'b', { lease: id });
  now += 4_000;
  expect((await s.leaseTimeToLive(id)).ttl).toBe(1);
  now += 1_000;
  expect(await codeOf(s.keepAlive(id))).toBe('CCA-E0107');
  expect((await s.range({ prefix: 'l/' })).kvs).toEqual([]);
  expect(await s.revision()).toBe(4);
  await s.close();
});

test('the driver claim holds across processes and is released when its process is SIGKILLed', async () => {
  const path = join(dir, 'driver-proc.db');
  const script = `import { SqliteStore } from ${JSON.stringify(new URL('../../db/sqlite/store.ts', import.meta.url).pathname)};
    const s = await SqliteStore.open(${JSON.stringify(`sqlite:${path}`)}); s.claimDriver(); console.log('claimed'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout!.on('data', (d) => String(d).includes('claimed') && resolve()));
  const store = await SqliteStore.open(`sqlite:${path}`);
  expect(await codeOf(() => store.claimDriver())).toBe('CCA-E0125');
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r));
  const claim = store.claimDriver();
  claim.release();
  await store.close();
}, 20_000);

test('getMany reads while another connection holds the writer’s lock: a read, not a txn', async () => {
  const path = join(dir, 'getmany.db');
  const s = await SqliteStore.open(`sqlite:${path}`);
  await s.put('gm/a', '1');
  const writer = new Database(path);
  writer.exec('BEGIN IMMEDIATE');
  try {
    const got = await s.getMany(['gm/a', 'gm/none']);
    expect(got.map((kv) => kv?.value ?? null)).toEqual(['1', null]);
  } finally {
    writer.exec('ROLLBACK');
    writer.close();
    await s.close();
  }
});
