import { afterAll, expect, test } from 'vitest';
import { createPool, timeCheckouts } from '../../db/postgres/pool.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/**
 * cca_store_pool_wait_seconds: every checkout from the store's pool is timed, whether a
 * caller connects or pg-pool's own `query` does, and a checkout that queues behind a held
 * connection reports the time it queued.
 */
test('a checkout that waits for the pool reports its wait; plain queries are timed too', async () => {
  const db = await createTestDatabase('poolwait');
  cleanups.push(db.drop);
  const pool = createPool(db.url, 1);
  cleanups.push(() => pool.end());
  const waits: number[] = [];
  timeCheckouts(pool, (s) => waits.push(s));

  expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
  expect(waits).toHaveLength(1);

  const held = await pool.connect();
  expect(waits).toHaveLength(2);
  const queued = pool.query('SELECT 2 AS two');
  await new Promise((r) => setTimeout(r, 300));
  expect(waits).toHaveLength(2); // still queued: the only connection is held
  held.release();
  expect((await queued).rows[0]).toEqual({ two: 2 });
  expect(waits).toHaveLength(3);
  expect(waits[2]).toBeGreaterThanOrEqual(0.29);

  // An explicit checkout that queues is timed the same way.
  const again = await pool.connect();
  const second = pool.connect();
  await new Promise((r) => setTimeout(r, 300));
  again.release();
  (await second).release();
  expect(waits).toHaveLength(5);
  expect(waits[4]).toBeGreaterThanOrEqual(0.29);

  // The callback form (what pg-pool's query uses) hands the client through unchanged.
  const viaCallback = await new Promise<number>((resolve, reject) =>
    pool.connect((err, client, done) => {
      if (err || !client) return reject(err ?? new Error('no client'));
      client.query('SELECT 3 AS three').then((r) => {
        done();
        resolve(r.rows[0].three as number);
      }, reject);
    }),
  );
  expect(viaCallback).toBe(3);
  expect(waits).toHaveLength(6);
});
