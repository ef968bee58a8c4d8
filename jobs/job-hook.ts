import type pg from 'pg';
import { abortedByPostgres } from '../db/postgres/errors.js';
import type { CommitHook, HookStatement } from '../db/postgres/batch-apply.js';
import { router, stepKey, type Change, type Controller, type Route } from './controller.js';

export const STEP_TASK = 'cca-step';
export const FANOUT_TASK = 'cca-fanout';

export interface JobSpec {
  task: string;
  payload: { controller: string; subject?: string };
  key: string;
  /** Absolute ms; omitted = now. */
  runAt?: number;
  /** graphile-worker's priority, lower first; omitted = 0 (Controller.priority). */
  priority?: number;
}

/** Which steps a set of changes wakes (`route`): one job per controller and subject, or a fan-out. */
export function jobsForChanges(controllers: readonly Controller[], changes: readonly Change[]): JobSpec[] {
  return jobsRouted(router(controllers), changes);
}

/** `jobsForChanges` with a router made once (a commit hook routes every commit). */
function jobsRouted(routes: (change: Change) => Route[], changes: readonly Change[]): JobSpec[] {
  const jobs = new Map<string, JobSpec>();
  for (const change of changes) {
    for (const r of routes(change)) {
      const key = r.fanout ? fanoutKey(r.controller) : stepKey(r.controller.name, r.subject);
      if (!jobs.has(key)) jobs.set(key, r.fanout ? fanoutJob(r.controller) : stepJob(r.controller, r.subject));
    }
  }
  return [...jobs.values()];
}

/** The job of one (controller, subject) step, keyed so a burst of changes is one pending run. */
export function stepJob(c: Controller, subject: string | undefined): JobSpec {
  return { task: STEP_TASK, payload: { controller: c.name, ...(subject !== undefined ? { subject } : {}) }, key: stepKey(c.name, subject), ...(c.priority ? { priority: c.priority } : {}) };
}

/** The job that lists a keyed controller's subjects and enqueues a step for each. */
export function fanoutJob(c: Controller): JobSpec {
  return { task: FANOUT_TASK, payload: { controller: c.name }, key: fanoutKey(c), ...(c.priority ? { priority: c.priority } : {}) };
}

function fanoutKey(c: Controller): string {
  return `${c.name}:*`;
}

/**
 * Enqueue keyed jobs on the given connection, inside the caller's transaction, deduplicated
 * by job key (graphile-worker's add_jobs), in key order: a burst of writes is one pending run.
 * `preserveRunAt`: a pending job with the same key keeps its run_at (a watchdog's re-add
 * never postpones it); in every mode a job locked by a worker (running, or held by a dead
 * pod) loses its key and a new one is made.
 * add_jobs clears the key of locked jobs before it inserts, so a job a worker locks between
 * the two (its get_job waits on nothing we hold) is neither updated nor replaced: the add is
 * silently dropped, while that worker's step reads a store without the caller's change — a
 * controller then never ran for it (CI: the scheduler stalled with four unplaced replicas).
 * Every key add_jobs did not answer is added again: that job is locked now, so it loses its
 * key and a new one is made. (Upstream: graphile/worker issue 580, open for 0.17.3.)
 */
export async function addJobs(client: pg.ClientBase, specs: readonly JobSpec[], schema = 'graphile_worker', preserveRunAt = false): Promise<void> {
  // In one order everywhere: add_jobs inserts or updates one row per key, and two calls that
  // met the same keys in opposite orders (a fan-out's subjects, a commit's changes) deadlocked.
  let jobs = inKeyOrder(specs);
  for (let attempt = 1; jobs.length > 0; attempt++) {
    const added = new Set((await addJobsOnce(client, jobs, schema, preserveRunAt)).map((r) => r.key));
    jobs = jobs.filter((j) => !added.has(j.key));
    if (jobs.length > 0 && attempt >= ADD_ATTEMPTS) {
      throw new Error(`graphile-worker's add_jobs dropped ${jobs.length} job(s) ${ADD_ATTEMPTS} times: ${jobs.slice(0, 5).map((j) => j.key).join(', ')}`);
    }
  }
}

/** Calls of add_jobs for keys it dropped: the second always finds the job locked, so 3 is a bound, not a hope. */
export const ADD_ATTEMPTS = 3;

async function addJobsOnce(client: pg.ClientBase, jobs: readonly JobSpec[], schema: string, preserveRunAt: boolean): Promise<{ key: string }[]> {
  const r = await client.query<{ key: string }>(
    `WITH ${PENDING} AS (${pendingJobs(schema, 'true', '$6::boolean')}),
     added AS (${addJobsCall(schema, `k NOT IN (SELECT key FROM ${PENDING})`, '$6::boolean')})
     SELECT key FROM ${PENDING} UNION ALL SELECT key FROM added`,
    [...jobColumns(jobs), preserveRunAt],
  );
  return r.rows;
}

/** The common table expression holding the jobs a call leaves as they are (pendingJobs). */
const PENDING = 'jobs_pending';

/**
 * The jobs among $1…$4 (the priority, $5, follows from the key) that are already waiting to
 * run as asked: unlocked, never tried, the same payload, and due (or, with `preserve`, at
 * any time: add_jobs would keep their run_at).
 * add_jobs would rewrite each such row to what it holds already (a new row version, every
 * index entry again, a notification waking every worker); instead the call takes a share
 * lock on it until commit. A worker's fetch (FOR UPDATE SKIP LOCKED) passes over a row so
 * locked, so no worker starts the job before the caller's changes are visible; a worker
 * that locked it first makes the lock wait, and the row, read again, is no longer pending
 * (add_jobs then makes a new job: see addJobs). Share, not key share: a worker that takes a
 * job by a plain UPDATE (no FOR UPDATE) must conflict too. In key order, as add_jobs locks.
 */
function pendingJobs(schema: string, where: string, preserve: string): string {
  return `SELECT jobs.key FROM ${schema}._private_jobs AS jobs
       JOIN unnest($1::text[], $2::text[], $3::float8[], $4::text[]) AS j(t, p, r, k) ON jobs.key = j.k
       WHERE ${where} AND jobs.locked_at IS NULL AND jobs.attempts = 0 AND jobs.payload::text = j.p
         AND (${preserve} OR (j.r IS NULL AND jobs.run_at <= now()))
       ORDER BY jobs.key FOR SHARE OF jobs`;
}

/**
 * add_jobs on the rows of $1…$4 that `where` admits, called only when there is one (every
 * call notifies every worker).
 */
function addJobsCall(schema: string, where: string, preserve: string): string {
  return `SELECT a.key FROM (SELECT ${jobSpecArray(schema, where)} AS specs) s, LATERAL ${schema}.add_jobs(s.specs, ${preserve}) a
       WHERE cardinality(s.specs) > 0`;
}

/**
 * The job_spec array add_jobs takes, from `jobColumns` as $1…$5, in their order, with the
 * rows `where` admits (a condition on t, p, r, k).
 */
function jobSpecArray(schema: string, where: string): string {
  return `array(SELECT row(t, p::json, NULL, CASE WHEN r IS NULL THEN NULL ELSE to_timestamp(r / 1000.0) END, 25, k, pr::smallint, NULL)::${schema}.job_spec
       FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[], $5::int[]) WITH ORDINALITY AS j(t, p, r, k, pr, o) WHERE ${where} ORDER BY o)`;
}

/** Jobs in key order: every add_jobs call meets its keys in one order (see addJobs). */
function inKeyOrder(specs: readonly JobSpec[]): JobSpec[] {
  return [...specs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** A list of jobs as add_jobs' five columns: task, payload, run at (ms or null), key, priority. */
function jobColumns(jobs: readonly JobSpec[]): unknown[] {
  return [jobs.map((j) => j.task), jobs.map((j) => JSON.stringify(j.payload)), jobs.map((j) => j.runAt ?? null), jobs.map((j) => j.key), jobs.map((j) => j.priority ?? 0)];
}

/** Attempts of one job-queue statement that Postgres aborts as a deadlock's victim. */
export const JOB_STATEMENT_ATTEMPTS = 3;

/**
 * Run a job-queue statement that is its own transaction (no caller's BEGIN around it) again
 * when Postgres chose it as a deadlock's victim: it was rolled back, so it can go again.
 */
export async function retryingAborted<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (e) {
      if (attempt >= JOB_STATEMENT_ATTEMPTS || !abortedByPostgres(e)) throw e;
    }
  }
}

/** `addJobs` as a statement of its own (no caller's transaction), again if Postgres picks it as a deadlock's victim. */
export async function addJobsAlone(client: pg.ClientBase, specs: readonly JobSpec[], schema = 'graphile_worker', preserveRunAt = false): Promise<void> {
  await retryingAborted(() => addJobs(client, specs, schema, preserveRunAt));
}

/**
 * Make graphile-worker's task rows before anything adds jobs. On a fresh database every
 * add_jobs call, and each runner's first fetch, inserts the task identifiers it names, in
 * whatever order its plan takes them: two that insert the same new identifiers in opposite
 * orders wait on each other's uniqueness check and deadlock (a fresh clone's `npm start`
 * failed that way). Once the rows exist those inserts change nothing and wait on nobody.
 * In one order (sorted), so pods starting together do not deadlock here either.
 */
export async function registerTasks(db: pg.Pool | pg.ClientBase, identifiers: readonly string[], schema = 'graphile_worker'): Promise<void> {
  await db.query(`INSERT INTO ${schema}._private_tasks (identifier) SELECT t FROM unnest($1::text[]) AS t ORDER BY t ON CONFLICT DO NOTHING`, [[...identifiers].sort()]);
}

/**
 * The commit hook that turns a transaction's changes into controller jobs: `addJobs` on the
 * transaction's connection, or, in a snapshot batch's one write statement, the same add_jobs
 * calls as SQL (`jobStatement`).
 */
export function jobHook(controllers: readonly Controller[], schema = 'graphile_worker'): CommitHook {
  const routes = router(controllers);
  const hook: CommitHook = async (client, changes) => addJobs(client, jobsRouted(routes, changes), schema);
  hook.inStatement = (changes) => jobStatement(jobsRouted(routes, changes), schema);
  return hook;
}

/**
 * `addJobs` as common table expressions of the commit's write statement, after its counter
 * lock and only if it applies: add_jobs in key order, then once more for any key it did not
 * answer (that job was locked meanwhile: the second call gives it a new job, as `addJobs`
 * explains); `done` holds when every key was answered, else the statement fails whole.
 */
export function jobStatement(specs: readonly JobSpec[], schema = 'graphile_worker'): HookStatement | undefined {
  if (specs.length === 0) return undefined;
  const jobs = inKeyOrder(specs);
  const notPending = `k NOT IN (SELECT key FROM ${PENDING})`;
  return {
    name: `jobs_${schema}`,
    ctes: `${PENDING} AS (${pendingJobs(schema, ':applied', 'false')}),
     jobs_added AS (${addJobsCall(schema, `:applied AND ${notPending}`, 'false')}),
     jobs_again AS (${addJobsCall(schema, `:applied AND ${notPending} AND k NOT IN (SELECT key FROM jobs_added)`, 'false')})`,
    done: `(SELECT count(*) FROM ${PENDING}) + (SELECT count(*) FROM jobs_added) + (SELECT count(*) FROM jobs_again) = cardinality($4::text[])`,
    values: jobColumns(jobs),
  };
}
