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

/**
 * The interactive lane (PostgresStore.interactive): a person's write goes in the next batch
 * ahead of the background writes queued before it, and a person's read has connections of
 * its own. Ordering again, not time.
 */
test("the interactive lane's write commits ahead of queued background writes; its read ahead of queued background reads", async () => {
  const db = await createTestDatabase('lanes');
  cleanups.push(db.drop);
  const store = await PostgresStore.open(db.url, { poolSize: 10 });
  cleanups.push(() => store.close());
  const lane = store.interactive();
  await store.put('/k/0', 'v');

  // 50 background puts and then a person's, all queued at once (the first background one
  // may already be in a batch of its own): the person's commits ahead of the rest.
  const order: string[] = [];
  const background = Array.from({ length: 50 }, (_, i) => store.put(`/bg/${i}`, 'x').then(() => order.push(`bg${i}`)));
  const personal = lane.put('/person', 'y').then(() => order.push('person'));
  await Promise.all([...background, personal]);
  expect(order.indexOf('person'), order.join(' ')).toBeLessThanOrEqual(1);

  let readsDone = 0;
  const reads = Array.from({ length: 300 }, () => store.get('/k/0').then(() => readsDone++));
  const readsDoneAtAnswer = await lane.get('/k/0').then(() => readsDone);
  await Promise.all(reads);
  expect(readsDoneAtAnswer, `the person's read answered after ${readsDoneAtAnswer} of 300 background reads`).toBeLessThan(150);
  // Same data through either lane.
  expect((await lane.get('/bg/49'))?.value).toBe('x');
  expect((await store.get('/person'))?.value).toBe('y');
});
