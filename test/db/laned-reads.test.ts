import { afterAll, expect, test } from 'vitest';
import { LanedReads } from '../../db/postgres/laned-reads.js';
import { createPool } from '../../db/postgres/pool.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/**
 * The store's read connections shared by two lanes (db/postgres/laned-reads.ts): nothing is
 * reserved, and a person's read takes the next connection that frees before the background
 * reads already waiting.
 */
test('background reads use every connection; a waiting interactive read goes before waiting background ones', async () => {
  const db = await createTestDatabase('lanedreads');
  cleanups.push(db.drop);
  const pool = createPool(db.url, 3);
  cleanups.push(() => pool.end());
  const waits: number[] = [];
  const reads = new LanedReads(pool, 3, (s) => waits.push(s));
  const background = reads.lane('background');
  const interactive = reads.lane('interactive');

  const order: string[] = [];
  const sleeping = [0, 1, 2].map((i) => background.query('SELECT pg_sleep(0.3)').then(() => order.push(`sleep${i}`)));
  expect(reads.queued()).toEqual({ interactive: 0, background: 0 }); // all three run: none kept for people
  const lateBackground = background.query('SELECT pg_sleep(0.1)').then(() => order.push('background'));
  const person = interactive.query<{ n: number }>('SELECT 7 AS n').then((r) => {
    order.push('person');
    return r.rows[0]!.n;
  });
  expect(reads.queued()).toEqual({ interactive: 1, background: 1 });
  expect(await person).toBe(7);
  await Promise.all([...sleeping, lateBackground]);
  expect(order.indexOf('person'), order.join(' ')).toBeLessThan(order.indexOf('background'));
  expect(reads.queued()).toEqual({ interactive: 0, background: 0 });
  expect(waits).toHaveLength(5);
  expect(Math.max(...waits)).toBeGreaterThanOrEqual(0.25); // the two that queued waited for a sleep to end

  // One connection at a time: whoever waits is served in lane order, a person first.
  const one = new LanedReads(pool, 1);
  const served: string[] = [];
  const holding = one.lane('background').query('SELECT pg_sleep(0.2)');
  const queuedFirst = one.lane('background').query('SELECT 1').then(() => served.push('background'));
  const queuedSecond = one.lane('interactive').query('SELECT 2').then(() => served.push('person'));
  await Promise.all([holding, queuedFirst, queuedSecond]);
  expect(served).toEqual(['person', 'background']);

  // A failed statement frees its connection (and is not reused) like any other.
  await expect(background.query('SELECT no_such_column')).rejects.toThrow(/no_such_column/);
  expect((await background.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
});

test("a checkout (a person's write batch) waits in its lane like a read, and its release hands the connection on once", async () => {
  const db = await createTestDatabase('lanedcheckout');
  cleanups.push(db.drop);
  const pool = createPool(db.url, 1);
  cleanups.push(() => pool.end());
  const one = new LanedReads(pool, 1);
  const served: string[] = [];
  const holding = one.lane('background').query('SELECT pg_sleep(0.2)');
  const queuedRead = one.lane('background').query('SELECT 1').then(() => served.push('background read'));
  const client = await one.checkout('interactive');
  served.push('checkout');
  expect(one.queued()).toEqual({ interactive: 0, background: 1 }); // the read still waits: the batch holds the connection
  await client.query('BEGIN');
  await client.query('COMMIT');
  client.release();
  expect(() => client.release()).toThrow(/already been released/); // twice by mistake: pg refuses, the gate is not handed on again
  await Promise.all([holding, queuedRead]);
  expect(served).toEqual(['checkout', 'background read']);
  // Both gates free again: two reads at once need the one connection in turn, not a leaked slot.
  const a = one.lane('background').query('SELECT 1');
  expect(one.queued()).toEqual({ interactive: 0, background: 0 });
  const b = one.lane('background').query('SELECT 2');
  expect(one.queued()).toEqual({ interactive: 0, background: 1 });
  await Promise.all([a, b]);
});
