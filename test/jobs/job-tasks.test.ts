import { afterAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { createPool } from '../../db/postgres/pool.js';
import { migrateJobs } from '../../jobs/graphile-migrate.js';
import { FANOUT_TASK, JOB_STATEMENT_ATTEMPTS, STEP_TASK, addJobs, jobHook, registerTasks, retryingAborted, type JobSpec } from '../../jobs/job-hook.js';
import type { Controller } from '../../jobs/controller.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A database with graphile-worker's schema: its pool and its URL (for a store on it). */
async function freshJobSchema(label: string): Promise<{ pool: pg.Pool; url: string }> {
  const db = await createTestDatabase(label);
  cleanups.push(db.drop);
  const pool = createPool(db.url);
  cleanups.push(() => pool.end());
  await migrateJobs(pool);
  return { pool, url: db.url };
}

const job = (task: string, key: string): JobSpec => ({ task, payload: { controller: key }, key });

/**
 * Two transactions that each add a job of a task the database has not seen, then one of the
 * other's: each waits on the other's uncommitted task row. Answers the error, if any.
 */
async function crossedFirstJobs(pool: pg.Pool): Promise<unknown> {
  const [a, b] = [await pool.connect(), await pool.connect()];
  try {
    await a.query('BEGIN');
    await b.query('BEGIN');
    await addJobs(a, [job(STEP_TASK, 'a1')]);
    await addJobs(b, [job(FANOUT_TASK, 'b1')]);
    const crossed = await Promise.allSettled([addJobs(a, [job(FANOUT_TASK, 'a2')]), addJobs(b, [job(STEP_TASK, 'b2')])]);
    return crossed.find((r) => r.status === 'rejected')?.reason;
  } finally {
    await a.query('ROLLBACK').catch(() => undefined);
    await b.query('ROLLBACK').catch(() => undefined);
    a.release();
    b.release();
  }
}

describe('graphile-worker task rows made before any job', () => {
  test('on a fresh job schema, first jobs of new tasks added in crossed orders deadlock (what broke a fresh npm start)', async () => {
    const { pool } = await freshJobSchema('jobtasks-bare');
    expect((await crossedFirstJobs(pool)) as { code?: string }).toMatchObject({ code: '40P01' });
  });

  test('with the task rows registered first, the same crossed adds wait on nobody', async () => {
    const { pool } = await freshJobSchema('jobtasks-registered');
    const client = await pool.connect();
    try {
      await registerTasks(client, [STEP_TASK, FANOUT_TASK]);
    } finally {
      client.release();
    }
    expect(await crossedFirstJobs(pool)).toBeUndefined();
  });
});

describe('a job-queue statement chosen as a deadlock victim goes again', () => {
  const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });

  test('retried while Postgres aborts it, up to the stated attempts; other errors at once', async () => {
    let calls = 0;
    expect(await retryingAborted(async () => (++calls < JOB_STATEMENT_ATTEMPTS ? Promise.reject(deadlock()) : 'done'))).toBe('done');
    expect(calls).toBe(JOB_STATEMENT_ATTEMPTS);

    calls = 0;
    await expect(retryingAborted(async () => (++calls, Promise.reject(deadlock())))).rejects.toMatchObject({ code: '40P01' });
    expect(calls).toBe(JOB_STATEMENT_ATTEMPTS);

    calls = 0;
    await expect(retryingAborted(async () => (++calls, Promise.reject(Object.assign(new Error('no such table'), { code: '42P01' }))))).rejects.toThrow('no such table');
    expect(calls).toBe(1);
  });
});

describe('a job added while a worker takes the pending one of its key', () => {
  /** Until a statement of another session waits on a lock. */
  async function untilLockWait(pool: pg.Pool): Promise<void> {
    for (let i = 0; i < 200; i++) {
      if ((await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)).rowCount) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('no statement waited on a lock within 5 s');
  }

  test('is not lost: the taken job ran on a store without the change, so a pending one must remain', async () => {
    const { pool } = await freshJobSchema('jobtasks-taken');
    await registerTasks(pool, [STEP_TASK]);
    await addJobs(await pool.connect().then((c) => (cleanups.push(async () => c.release()), c)), [job(STEP_TASK, 'scheduler')]);
    const [worker, writer] = [await pool.connect(), await pool.connect()];
    try {
      // A worker takes the pending job (graphile-worker's get_job locks it in a short transaction)...
      await worker.query('BEGIN');
      await worker.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'w1' WHERE key = 'scheduler'`);
      // ...while a write's commit hook adds the same key: add_jobs saw it unlocked, then waits on the worker's row.
      await writer.query('BEGIN');
      const adding = addJobs(writer, [job(STEP_TASK, 'scheduler')]);
      await untilLockWait(pool);
      await worker.query('COMMIT'); // the worker's step now reads a store without the writer's change
      await adding;
      await writer.query('COMMIT');
      const rows = await pool.query<{ key: string | null; locked_by: string | null }>(`SELECT key, locked_by FROM graphile_worker._private_jobs ORDER BY id`);
      // The running job, and a pending one for the change it could not have seen.
      expect(rows.rows.filter((r) => r.locked_by === null)).toEqual([{ key: 'scheduler', locked_by: null }]);
    } finally {
      await worker.query('ROLLBACK').catch(() => undefined);
      await writer.query('ROLLBACK').catch(() => undefined);
      worker.release();
      writer.release();
    }
  });
});

describe('a job already waiting as asked is left as it is (no rewrite, no wake-up of every worker)', () => {
  type JobRow = { id: string; revision: number; attempts: number; run_at: Date; locked_at: Date | null };
  const rowOf = async (pool: pg.Pool, key: string): Promise<JobRow[]> =>
    (await pool.query<JobRow>(`SELECT id, revision, attempts, run_at, locked_at FROM graphile_worker._private_jobs WHERE key = $1`, [key])).rows;
  /** A worker's fetch as graphile-worker's getJob takes a job: the row locked FOR UPDATE SKIP LOCKED. */
  const fetchable = async (pool: pg.Pool, key: string): Promise<number> =>
    (await pool.query(`SELECT id FROM graphile_worker._private_jobs WHERE key = $1 AND locked_at IS NULL AND run_at <= now() FOR UPDATE SKIP LOCKED`, [key])).rowCount ?? 0;

  async function withClient<T>(pool: pg.Pool, f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await pool.connect();
    try {
      return await f(c);
    } finally {
      c.release();
    }
  }

  test('a pending, due job of the same key keeps its row; a worker passes over it until the adder commits', async () => {
    const { pool } = await freshJobSchema('jobtasks-pending');
    await registerTasks(pool, [STEP_TASK]);
    await withClient(pool, (c) => addJobs(c, [job(STEP_TASK, 'scheduler')]));
    const [before] = await rowOf(pool, 'scheduler');
    const adder = await pool.connect();
    try {
      await adder.query('BEGIN');
      await addJobs(adder, [job(STEP_TASK, 'scheduler')]);
      // Not taken while the adder's changes are not visible: a step started now would miss them.
      expect(await fetchable(pool, 'scheduler')).toBe(0);
      await adder.query('COMMIT');
    } finally {
      await adder.query('ROLLBACK').catch(() => undefined);
      adder.release();
    }
    expect(await fetchable(pool, 'scheduler')).toBe(1);
    // The same row, not rewritten (add_jobs would have moved its revision).
    expect(await rowOf(pool, 'scheduler')).toEqual([before]);
  });

  test('a job due later, or one that failed, is added as before: brought to now, its attempts reset', async () => {
    const { pool } = await freshJobSchema('jobtasks-not-pending');
    await registerTasks(pool, [STEP_TASK]);
    await withClient(pool, (c) => addJobs(c, [job(STEP_TASK, 'later'), job(STEP_TASK, 'failed')]));
    await pool.query(`UPDATE graphile_worker._private_jobs SET run_at = now() + interval '1 hour' WHERE key = 'later'`);
    await pool.query(`UPDATE graphile_worker._private_jobs SET attempts = 1, last_error = 'boom', run_at = now() - interval '1 second' WHERE key = 'failed'`);
    await withClient(pool, (c) => addJobs(c, [job(STEP_TASK, 'later'), job(STEP_TASK, 'failed')]));
    expect(await fetchable(pool, 'later')).toBe(1);
    const [failed] = await rowOf(pool, 'failed');
    expect(failed!.attempts).toBe(0);
    expect(failed!.revision).toBe(1);
  });

  test('in the commit statement too: a second commit waking the same step leaves its job row alone', async () => {
    const { pool, url } = await freshJobSchema('jobtasks-statement');
    await registerTasks(pool, [STEP_TASK]);
    const watcher: Controller = { name: 'watcher', watches: ['/w/'], reconcile: async () => ({}) };
    const store = await PostgresStore.open(url, { commitHook: jobHook([watcher]) });
    cleanups.push(() => store.close());
    await store.put('/w/a', '1');
    const [first] = await rowOf(pool, 'watcher');
    expect(first).toBeDefined();
    await store.put('/w/b', '2');
    expect(await rowOf(pool, 'watcher')).toEqual([first]);
    // Taken by a worker, a new change makes a new job (the running step may have missed it).
    await pool.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'w1' WHERE key = 'watcher'`);
    await store.put('/w/c', '3');
    const rows = await pool.query<{ key: string | null; locked_by: string | null }>(`SELECT key, locked_by FROM graphile_worker._private_jobs ORDER BY id`);
    expect(rows.rows).toEqual([
      { key: null, locked_by: 'w1' },
      { key: 'watcher', locked_by: null },
    ]);
  });
});
