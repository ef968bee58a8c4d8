/**
 * graphile-worker releases a finished job without awaiting it (jobs/graphile-driver.ts,
 * isJobReleaseFailure): a Postgres that goes away while a step runs used to end the pod with
 * an unhandled rejection. Here a real pod meets exactly that: the retention step (a timer-only
 * controller) is held in flight by the test's advisory lock on its step key, then Postgres
 * stops. The pod must keep serving, and once Postgres is back the retention step — whose only
 * job is left locked — must run again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, expect, test } from 'vitest';
import { demoPostgres } from '../../demo/postgres.js';
import { startPod } from '../support/pods.js';
import { parsePromText, total } from '../support/prom-text.js';
import { waitFor } from '../support/wait.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const retentionRuns = async (url: string) => total(parsePromText(await (await fetch(`${url}/metrics`)).text()).samples, 'cca_job_runs_total', { controller: 'retention', result: 'ok' });

test('Postgres stops while a step runs: the pod keeps serving and every controller runs again once it is back', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-job-release-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const db = await demoPostgres(dir, 'jobrel');
  cleanups.push(() => db.stop());

  // The step takes `pg_advisory_xact_lock('cca-step:retention')` in its job's transaction:
  // holding it first keeps the pod's first retention step (and its locked job) in flight.
  const holder = new pg.Client({ connectionString: db.url });
  holder.on('error', () => undefined); // the outage ends this connection
  await holder.connect();
  cleanups.push(() => holder.end());
  await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', ['cca-step:retention']);

  const pod = await startPod('p', db.url, cleanups);
  await waitFor(
    'the retention step to wait for its lock',
    () => holder.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`),
    (r) => r.rows[0]!.n === 1,
    30_000,
  );
  expect(await retentionRuns(pod.url)).toBe(0);

  await db.outage(5_000, async () => {
    // The held step failed with the database and graphile-worker could not release its job.
    expect(pod.child.exitCode, `the pod exited during the outage:\n${pod.output()}`).toBe(null);
    expect((await fetch(`${pod.url}/healthz`)).ok).toBe(true);
  });

  // The retention step's only job is still locked (graphile-worker's lock expiry is 4 h) and
  // retention wakes on nothing but its timer: it runs again only because the pod enqueued
  // every controller once the database answered.
  await waitFor('the retention step to run again', () => retentionRuns(pod.url), (n) => n >= 1, 45_000).catch((e: Error) => {
    throw new Error(`${e.message}\nthe pod printed:\n${pod.output()}`);
  });
  expect(pod.child.exitCode).toBe(null);
  const out = pod.output();
  expect(out).toMatch(/every controller enqueued again after a job the queue could not release/);
  expect(out).not.toMatch(/Unhandled|unhandledRejection|CCA-E0001/);
}, 120_000);
