import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { createPool } from '../../db/postgres/pool.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { startGraphileDriver } from '../../jobs/graphile-driver.js';
import { waitFor } from '../support/wait.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * A pod that dies while it runs the lease-expiry job leaves that job locked for graphile's
 * job expiry (4 h). The surviving pods must not wait that long: leases keep expiring.
 */
test('lease expiry survives a pod that died holding its upkeep job', async () => {
  const db = await createTestDatabase('upkeep');
  cleanups.push(db.drop);
  const store = await PostgresStore.open(db.url, { leaseReaperMs: 0 });
  cleanups.push(() => store.close());
  const pool = createPool(db.url);
  cleanups.push(() => pool.end());
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  cleanups.push(() => admin.end());

  // Pod A: the one that will "die". Its upkeep creates the keyed jobs; then it stops (as a
  // SIGKILLed pod would, minus the lock) and we lock its lease job in its name.
  const a = await startGraphileDriver({ pool, store, controllers: [], pollIntervalMs: 100, maintenance: { store, leaseEveryMs: 200, watchdogEveryMs: 60_000 } });
  await a.kickAll();
  await waitFor('one cca-expire-leases job', async () => (await admin.query(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = 'cca-expire-leases'`)).rows[0].n as number, (n) => n === 1, 10_000);
  await a.stop();
  const locked = await admin.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'dead-pod' WHERE key = 'cca-expire-leases' RETURNING id`);
  expect(locked.rowCount).toBe(1);

  // Pod B starts later and never runs kickAll (it did not start the cluster): only its watchdog can help.
  const b = await startGraphileDriver({ pool, store, controllers: [], pollIntervalMs: 100, maintenance: { store, leaseEveryMs: 200, watchdogEveryMs: 500 } });
  cleanups.push(() => b.stop());
  const lease = await store.grantLease(1);
  await store.put('/nodes/gone', 'x', { lease: lease.id });
  const gone = await waitFor('/nodes/gone expired', () => store.get('/nodes/gone'), (kv) => kv == null, 20_000);
  expect(gone ?? undefined).toBeUndefined();
  // The dead pod's job is still locked (graphile would hold it 4 h), but no longer keyed.
  const dead = await admin.query(`SELECT key, locked_by FROM graphile_worker._private_jobs WHERE id = $1`, [locked.rows[0].id]);
  expect(dead.rows[0]).toEqual({ key: null, locked_by: 'dead-pod' });
}, 60_000);
