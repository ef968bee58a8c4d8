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
 * The interactive lane (PostgresStore.interactive): a person's write runs in a batch of its
 * own beside the background's, so it waits for neither the background writes queued before
 * it nor a large batch in flight (only, at most, for another batch's one write statement);
 * a person's read takes the next free connection ahead of queued background reads.
 * Ordering again, not time.
 */
test("the interactive lane's write commits ahead of queued background writes; its read ahead of queued background reads", async () => {
  const db = await createTestDatabase('lanes');
  cleanups.push(db.drop);
  const store = await PostgresStore.open(db.url, { poolSize: 10 });
  cleanups.push(() => store.close());
  const lane = store.interactive();
  await store.put('/k/0', 'v');
  // A person's batch takes its connection from the read pool: opened cold inside the race
  // below, the connection's setup alone let both background batches commit first (a suite
  // run under load; the claim is about queues, and a serving pod's pool is warm).
  await lane.get('/k/0');

  // 50 background puts and then a person's, all queued at once (the first background one
  // may already be in a batch of its own): the person's commits ahead of the rest.
  const order: string[] = [];
  const background = Array.from({ length: 50 }, (_, i) => store.put(`/bg/${i}`, 'x').then(() => order.push(`bg${i}`)));
  const personal = lane.put('/person', 'y').then(() => order.push('person'));
  await Promise.all([...background, personal]);
  expect(order.indexOf('person'), order.join(' ')).toBeLessThanOrEqual(1);

  // A large background batch in flight (120 txns of 100 puts, queued behind a small one):
  // a person's put sent after it started commits before it, and it still commits whole.
  const big: string[] = [];
  const first = store.put('/big/first', 'x');
  const large = Array.from({ length: 120 }, (_, i) =>
    store.txn({ compare: [], success: Array.from({ length: 100 }, (_, j) => ({ put: { key: `/big/${i}/${j}`, value: 'x' } })) }).then(() => big.push(`bg${i}`)),
  );
  await first;
  await new Promise((r) => setTimeout(r, 0)); // the large batch is taken and on its way
  await lane.put('/person2', 'y').then(() => big.push('person'));
  await Promise.all(large);
  expect(big.indexOf('person'), big.join(' ')).toBe(0);
  expect((await store.range({ prefix: '/big/', countOnly: true })).count).toBe(1 + 120 * 100);

  let readsDone = 0;
  const reads = Array.from({ length: 300 }, () => store.get('/k/0').then(() => readsDone++));
  const readsDoneAtAnswer = await lane.get('/k/0').then(() => readsDone);
  await Promise.all(reads);
  expect(readsDoneAtAnswer, `the person's read answered after ${readsDoneAtAnswer} of 300 background reads`).toBeLessThan(150);
  // Same data through either lane.
  expect((await lane.get('/bg/49'))?.value).toBe('x');
  expect((await store.get('/person'))?.value).toBe('y');
});
