import { afterAll, expect, test } from 'vitest';
import { createClient } from '../../db/postgres/pool.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { PostgresTxStore } from '../../db/postgres/tx-store.js';
import { createTestDatabase } from '../support/databases.js';
import { codeOf } from './conformance.js';

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

async function setup() {
  const db = await createTestDatabase('tx');
  dbs.push(db);
  const store = await PostgresStore.open(db.url);
  const client = createClient(db.url);
  await client.connect();
  return { url: db.url, store, client };
}

test('a step transaction commits as one: own writes visible inside, nothing outside until COMMIT, hook sees the keys', async () => {
  const { store, client } = await setup();
  await store.put('a', '1'); // 2
  const hooked: string[][] = [];
  const tx = new PostgresTxStore(client, { target: 'test', hook: async (_c, keys) => void hooked.push(keys) });
  await client.query('BEGIN');
  const r = await tx.txn({
    compare: [{ key: 'a', target: 'modRevision', op: '=', value: 2 }],
    success: [{ put: { key: 'a', value: '2' } }, { put: { key: 'b', value: '1' } }],
  });
  expect(r).toMatchObject({ succeeded: true, revision: 3 });
  expect((await tx.put('c', '1')).revision).toBe(4);
  expect((await tx.get('a'))?.value).toBe('2');
  expect(await tx.revision()).toBe(4);
  // Outside the transaction nothing is visible yet, and another writer waits for the lock.
  expect((await store.get('a'))?.value).toBe('1');
  const waiting = store.put('d', '1');
  await client.query('COMMIT');
  expect((await waiting).revision).toBe(5);
  expect((await store.range({ prefix: '' })).kvs.map((k) => `${k.key}=${k.value}@${k.modRevision}`)).toEqual([
    'a=2@3',
    'b=1@3',
    'c=1@4',
    'd=1@5',
  ]);
  expect(hooked).toEqual([['a', 'b'], ['c']]);
  await client.end();
  await store.close();
});

test('a rolled-back step burns no revision and leaves no trace', async () => {
  const { store, client } = await setup();
  const tx = new PostgresTxStore(client, { target: 'test' });
  await client.query('BEGIN');
  await tx.put('x', '1');
  await tx.put('y', '1');
  await client.query('ROLLBACK');
  expect(await store.revision()).toBe(1);
  expect((await store.put('z', '1')).revision).toBe(2);
  expect(await store.get('x')).toBeNull();
  expect(await codeOf(async () => tx.watch())).toBe('CCA-E0122');
  await client.end();
  await store.close();
});
