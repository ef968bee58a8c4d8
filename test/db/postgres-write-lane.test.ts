import { afterAll, expect, test } from 'vitest';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/**
 * The write batch has a connection of its own: a put sent after a flood of reads does not
 * queue behind them for a connection (a busy pod's reads kept every write waiting).
 * Ordering, not time: with one shared pool the put's batch waits for its turn after every
 * read queued before it; with its own connection it commits while most are still queued.
 */
test('a write does not wait behind the reads queued for the pool', async () => {
  const db = await createTestDatabase('writelane');
  cleanups.push(db.drop);
  const store = await PostgresStore.open(db.url, { poolSize: 3 });
  cleanups.push(() => store.close());
  await store.put('/k/0', 'v');

  const READS = 300;
  let readsDone = 0;
  const reads = Array.from({ length: READS }, () => store.get('/k/0').then(() => readsDone++));
  const readsDoneAtCommit = await store.put('/k/1', 'w').then(() => readsDone);
  await Promise.all(reads);
  expect(readsDone).toBe(READS);
  expect(readsDoneAtCommit, `the put committed after ${readsDoneAtCommit} of ${READS} reads`).toBeLessThan(READS / 2);
});
