import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { openStore } from '../../db/index.js';
import { createTestDatabase } from '../support/databases.js';
import { cca } from './cli-process.js';

/** `cca store snapshot | restore | copy` as an operator runs them: SQLite → file → Postgres → SQLite. */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

test('snapshot a SQLite trial, restore it into Postgres, copy that to a new SQLite file; a damaged file is refused', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-store-cli-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const db = await createTestDatabase('storecli');
  cleanups.push(db.drop);
  const trial = `sqlite:${path.join(dir, 'trial.db')}`;
  const s = await openStore(trial);
  const lease = (await s.grantLease(90)).id;
  for (let i = 0; i < 50; i++) await s.put(`/svc/${i}`, JSON.stringify({ i }), i < 5 ? { lease } : {});
  await s.close();

  const file = path.join(dir, 'trial.snap');
  const snap = await cca(['store', 'snapshot', '--store', trial, file]);
  expect(snap.code, snap.stderr).toBe(0);
  expect(snap.stdout).toMatch(/at revision \d+: 50 keys, 1 leases/);
  expect(snap.stderr).toContain('read 50 / 50 keys');

  const restore = await cca(['store', 'restore', '--store', db.url, file]);
  expect(restore.code, restore.stderr).toBe(0);
  expect(restore.stdout).toContain('50 keys, 1 leases re-granted');
  const again = await cca(['store', 'restore', '--store', db.url, file]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('CCA-E0153');

  const copyTo = `sqlite:${path.join(dir, 'copy.db')}`;
  const copy = await cca(['store', 'copy', '--from', db.url, '--to', copyTo]);
  expect(copy.code, copy.stderr).toBe(0);
  const c = await openStore(copyTo);
  const kvs = (await c.range({ prefix: '' })).kvs;
  expect(kvs.length).toBe(50);
  expect(kvs.filter((kv) => kv.lease !== 0).length).toBe(5);
  expect((await c.leaseTimeToLive(kvs.find((kv) => kv.lease)!.lease)).grantedTtl).toBe(90);
  await c.close();

  await writeFile(file, (await readFile(file, 'utf8')).replace('{\\"i\\":7}', '{\\"i\\":8}'));
  const bad = await cca(['store', 'restore', '--store', `sqlite:${path.join(dir, 'never.db')}`, file]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('CCA-E0154');
  expect(bad.stderr).toContain('checksum');
});
