import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { JOBS_POOL_OVERHEAD, jobsPoolSize } from '../../jobs/graphile-driver.js';
import { ADMIN } from '../handlers/harness.js';
import { createTestDatabase } from '../support/databases.js';
import { service } from '../support/pods.js';
import { cca, ccaServer } from './cli-process.js';

/**
 * Each pod's Postgres connections, counted in pg_stat_activity by application_name while
 * the pod is busy (services applied, steps running, many concurrent reads): never more than
 * the budget docs/store.md states, pool-size + 1 + workers + 4. Client backends only: an
 * autovacuum worker on the busy database is listed under it too, with no name (a loaded
 * run failed on one).
 */

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

test('graphile-worker\'s pool follows --workers', () => {
  expect(jobsPoolSize(2)).toBe(2 + JOBS_POOL_OVERHEAD);
  expect(jobsPoolSize(64)).toBe(64 + JOBS_POOL_OVERHEAD);
  expect(jobsPoolSize(0)).toBe(1);
});

const named = (url: string, name: string) => `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`;

test.each([
  { poolSize: 3, workers: 2 },
  { poolSize: 10, workers: 4 },
])('a pod with --pool-size $poolSize --workers $workers stays within its connection budget', async ({ poolSize, workers }) => {
  const db = await createTestDatabase('conns');
  cleanups.push(db.drop);
  expect((await cca(['migrate', '--store', db.url])).code).toBe(0);
  const name = `pod${poolSize}x${workers}`;
  const pod = await ccaServer(named(db.url, name), ['--pool-size', String(poolSize), '--workers', String(workers)]);
  cleanups.push(pod.stop);
  const probe = new pg.Client({ connectionString: db.url });
  await probe.connect();
  cleanups.push(() => probe.end());

  const most: Record<string, number> = {};
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const r = await probe.query<{ app: string; n: number }>(
        `SELECT application_name AS app, count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' GROUP BY 1`,
      );
      for (const { app, n } of r.rows) most[app] = Math.max(most[app] ?? 0, n);
    }
  })();
  const headers = { authorization: `Bearer ${ADMIN}` };
  // Load: services applied (steps for every controller), and bursts of reads and watches.
  for (let round = 0; round < 4; round++) {
    await Promise.all([
      ...Array.from({ length: 3 }, (_, i) =>
        fetch(`${pod.url}/v1/apply`, { method: 'POST', headers: { ...headers, 'content-type': 'text/x-cca' }, body: service(round * 3 + i) }).then((r) => r.text()),
      ),
      ...Array.from({ length: 40 }, (_, i) => fetch(`${pod.url}/v1/${i % 2 ? 'replicas' : 'services'}`, { headers }).then((r) => r.text())),
    ]);
  }
  sampling = false;
  await sampler;
  const total = Object.values(most).reduce((a, b) => a + b, 0);
  const budget = poolSize + 1 + jobsPoolSize(workers);
  console.log(`pod --pool-size ${poolSize} --workers ${workers}: most connections seen ${JSON.stringify(most)}; budget ${budget}`);
  expect(Object.keys(most).sort()).toEqual([name, `${name}-jobs`, `${name}-listen`].sort());
  expect(most[name]).toBeLessThanOrEqual(poolSize);
  expect(most[name], 'the reads never needed more than one store connection: the load is too light to prove the cap').toBeGreaterThan(1);
  expect(most[`${name}-listen`]).toBe(1);
  expect(most[`${name}-jobs`]).toBeLessThanOrEqual(jobsPoolSize(workers));
  expect(total).toBeLessThanOrEqual(budget);
  await pod.stop();
});
