import { Logger, run, runMigrations, type Runner, type Task } from 'graphile-worker';
import type pg from 'pg';
import { CcaError, type Diagnostic } from '../core/diagnostics/index.js';
import { pgFailure } from '../db/postgres/errors.js';
import { STEP_PRIORITY, stepKey, type Controller } from './controller.js';
import { FANOUT_TASK, STEP_TASK, addJobs, addJobsAlone, fanoutJob, registerTasks, retryingAborted, stepJob, type JobSpec } from './job-hook.js';
import { compactOnce, type CompactionPolicy } from './maintenance.js';
import type { StoreMirror } from '../db/mirror.js';
import type { Store } from '../db/store.js';
import { runStep, StepBook, stepFailure, stepResult, type StepMetrics, type StepOutcome } from './step-runner.js';

const LEASE_TASK = 'cca-expire-leases';

/**
 * An upkeep job. Lease expiry goes ahead of every step (STEP_PRIORITY.leases): a reaper held
 * back behind a queue of steps reads as a silence of every pod, after which it renews every
 * lease once (CCA-E0123) — a 10,000-replica apply did that four times while 300 steps waited.
 */
function upkeepJob(task: string, runAt?: number): JobSpec {
  return { task, payload: { controller: task }, key: task, ...(runAt !== undefined ? { runAt } : {}), ...(task === LEASE_TASK ? { priority: STEP_PRIORITY.leases } : {}) };
}

/** How long a step's own transaction may sit idle while the step runs (PG_BOUNDS allows 10 s). */
const STEP_IDLE_LIMIT = '120s';
const COMPACT_TASK = 'cca-compact';
/**
 * A step job taken while the same step runs on another worker of this pod is put off this
 * long at most: the running step's end makes it due at once; this is the backstop if that
 * end cannot reach the database.
 */
export const DEFERRED_STEP_MS = 2_000;

/**
 * What the driver counts per step. The server pod's metrics (handlers/metrics.ts) fit it;
 * the jobs layer names only the shape, so it imports nothing of the HTTP side.
 */
export interface JobMetrics {
  jobRuns: { inc(labels: { controller: string; result: 'ok' | 'error' }): void };
  stepDuration: { observe(labels: { controller: string }, seconds: number): void };
}

export interface GraphileDriverOptions {
  /** graphile-worker's pool: its jobs, and each running step's own lock and timer. */
  pool: pg.Pool;
  /**
   * What steps read and write: the pod's PostgresStore, whose commit hook (jobHook) enqueues
   * the steps a write wakes in the write's own transaction. A step's writes join its write
   * batches, so the revision counter is locked only for their compare-and-write.
   */
  store: Store;
  controllers: readonly Controller[];
  /**
   * The pod's read mirror of `store` (db/mirror.ts): each step reads the prefixes it covers
   * there, at or after the head when the step began, instead of from the database.
   */
  mirror?: StoreMirror;
  /** Steps this pod runs at once. */
  concurrency?: number;
  /** How long a step job taken while the same step runs in this pod is put off at most (DEFERRED_STEP_MS). */
  deferredStepMs?: number;
  /** graphile-worker's poll for timed jobs; a timer runs at most this late (NOTIFY wakes the rest). */
  pollIntervalMs?: number;
  /** Counts every step (the server's metrics). */
  metrics?: StepMetrics;
  /** Step failures as every driver reports them (jobs/step-runner.ts); upkeep failures once per distinct problem. */
  onDiagnostic?: (d: Diagnostic) => void;
  /**
   * graphile-worker's own log lines (its levels: error, warning, info, debug), with its scope
   * (worker id, task, job id) as fields; absent = dropped.
   */
  log?: (level: string, message: string, fields: Record<string, unknown>) => void;
  /** Every controller was enqueued again after a job the queue could not release (absorbRejection). */
  onResync?: () => void;
  /** The pod's clock and randomness, handed to steps through their context. */
  now?: () => number;
  random?: () => number;
  /**
   * Store upkeep as self-rescheduling keyed jobs (one pending run per cluster, whichever
   * pod takes it): lease expiry and compaction.
   */
  maintenance?: {
    store: { expireLeases(): Promise<number> } & Store;
    leaseEveryMs?: number;
    compactEveryMs?: number;
    /** How often every pod makes sure the upkeep jobs exist and are not held by a dead pod (default 5 s). */
    watchdogEveryMs?: number;
    compaction?: CompactionPolicy;
  };
}

export interface GraphileDriver {
  stop(): Promise<void>;
  /** Enqueue a step for every controller and subject now (start-up, or an operator's nudge). */
  kickAll(): Promise<void>;
  /**
   * A promise rejection nobody handled, offered by the pod's process (server/rejections.ts):
   * true when it is graphile-worker failing to release a finished job (isJobReleaseFailure).
   * Then it is reported (CCA-E0424) and every controller is enqueued again once the database
   * answers, since the job it could not release may have been a step's only timer.
   */
  absorbRejection(reason: unknown): boolean;
}

/** How often a pod tries to enqueue every controller again after a job it could not release. */
const RESYNC_EVERY_MS = 2_000;

/**
 * graphile-worker 0.17.3 releases a finished job (completeJob / failJob in its worker.js)
 * without awaiting it when job batching is off, its default; its retries do not cover a
 * refused connection, so a database that goes away while a step runs rejects a promise
 * nobody holds, and Node ends the process for it. Recognised by the release's own frames in
 * the (async) stack. Batching is no way out: its failure handler stops the worker pool.
 */
export function isJobReleaseFailure(reason: unknown): reason is Error {
  const stack = reason instanceof Error ? (reason.stack ?? '') : '';
  return /\bbatch(Complete|Fail)Jobs\b/.test(stack) && stack.includes('graphile-worker');
}

const quiet = new Logger(() => () => undefined);

/**
 * A task's failure this driver has already reported as a coded diagnostic (a step's through
 * its book, a fan-out's or upkeep's through `report`). Thrown only so graphile-worker retries
 * the job with its backoff.
 */
export class ReportedFailure extends Error {}

/**
 * graphile-worker's Logger over a plain sink: its scope and metadata become the line's fields.
 * Its "Failed task" line for a ReportedFailure comes at info, like a completed task's: at error
 * it would say again, once per job, what the pod already said once (during a store outage,
 * once per step and fan-out in flight).
 */
function graphileLogger(sink: NonNullable<GraphileDriverOptions['log']>): Logger {
  return new Logger((scope) => (level, message, meta) => {
    const reported = level === 'error' && meta?.failure === true && meta.error instanceof ReportedFailure;
    sink(reported ? 'info' : level, message, { ...scope, ...meta });
  });
}

/**
 * graphile-worker's pool for a pod running `workers` steps at once: one connection per
 * step in flight, plus a fixed 4: the LISTEN connection of each of the two runners (steps,
 * upkeep), the upkeep job's, and one for fetching jobs, the watchdog and kickAll. With no
 * workers, one (the migrations at start; it closes when idle).
 */
export const JOBS_POOL_OVERHEAD = 4;

/**
 * How often a server's store expires due leases. On a server every lease is a node's
 * backstop (the node controller expires nodes itself, docs/fencing.md), so a second late is
 * nothing; each run is five statements and wakes every idle worker of the pod (add_jobs
 * notifies): at 250 ms it was a third of an idle pod's statements.
 */
export const LEASE_UPKEEP_MS = 1_000;
export function jobsPoolSize(workers: number): number {
  return workers > 0 ? workers + JOBS_POOL_OVERHEAD : 1;
}

/**
 * Controllers as graphile-worker jobs. A step plans from reads of the store taken without
 * any lock, and each of its txns commits through the store's write batcher, which takes
 * the revision counter's lock only for that batch's compare-and-write; the follow-up jobs
 * a write wakes commit with it (the store's commit hook). So user writes never queue
 * behind a whole step, and a step, like in every other driver, may commit part of its
 * writes before it fails (each txn compares what justified it: DESIGN rule 2). A time
 * wakeup becomes a keyed job's run_at. Any number of pods may run this; a step that loses
 * a race writes nothing because of its compares.
 */
export async function startGraphileDriver(opts: GraphileDriverOptions): Promise<GraphileDriver> {
  const byName = new Map(opts.controllers.map((c) => [c.name, c]));
  const now = opts.now ?? (() => Date.now());
  const random = opts.random ?? Math.random;
  const logger = opts.log ? graphileLogger(opts.log) : quiet;
  const report = reportOnce(opts.onDiagnostic); // upkeep's failures
  /** A fan-out's or upkeep's failure: reported here, then thrown for graphile-worker to retry. */
  const failReported = (d: Diagnostic): never => {
    report(d);
    throw new ReportedFailure(d.message);
  };
  const book = new StepBook((d) => opts.onDiagnostic?.(d)); // the steps'
  const stepStore = (): Store => (opts.mirror ? opts.mirror.reads(opts.store) : opts.store);

  /** The steps running in this pod, by key, and whether a job for the same key was put off meanwhile. */
  const runningHere = new Map<string, { deferred: boolean }>();

  const stepTask: Task = async (payload, helpers) => {
    const { controller: name, subject } = payload as { controller: string; subject?: string };
    const controller = byName.get(name);
    if (!controller) return; // a job from a newer or older version of the server
    const key = stepKey(name, subject);
    const here = runningHere.get(key);
    if (here) {
      // The same step runs on another of this pod's workers (a change came while it ran):
      // waiting for its lock would hold this worker idle for the whole step while other
      // controllers' jobs wait (in a 3,000-replica convergence, ~12 of 20 worker-seconds).
      // Put the job off instead — added before this one completes, so a crash loses nothing —
      // and the running step's end brings it forward. Preserve run_at: if that end came first,
      // its job is due now and stays so.
      here.deferred = true;
      await helpers
        .withPgClient((client) => addJobsAlone(client, [{ ...stepJob(controller, subject), runAt: now() + (opts.deferredStepMs ?? DEFERRED_STEP_MS) }], 'graphile_worker', true))
        .catch((e: unknown) => failReported(pgFailure(e, 'the job database').diagnostic));
      opts.metrics?.deferred?.({ controller: name, ...(subject !== undefined ? { subject } : {}) });
      return;
    }
    const mine = { deferred: false };
    runningHere.set(key, mine);
    try {
      await runStepJob(controller, subject, key, helpers);
    } finally {
      runningHere.delete(key);
      // Due now (not preserved): the deferred job waits at most DEFERRED_STEP_MS if this fails.
      if (mine.deferred) await helpers.withPgClient((client) => addJobsAlone(client, [stepJob(controller, subject)])).catch(() => undefined);
    }
  };

  const runStepJob = async (controller: Controller, subject: string | undefined, key: string, helpers: Parameters<Task>[1]): Promise<void> => {
    const name = controller.name;
    const started = performance.now();
    const out = await helpers.withPgClient(async (client): Promise<StepOutcome> => {
      try {
        // This transaction holds no data lock, only the step's own lock and timer; the step
        // reads and writes through the store on other connections meanwhile, so this one
        // is idle for as long as the step runs (the server's TCP keepalives still end it
        // within seconds if this pod vanishes).
        // A step's change job and its timer job (or two pods) may be taken at once: the
        // same (controller, subject) must not run twice concurrently, so wait for it (within
        // a pod, stepTask puts the second off instead; this wait is for another pod's).
        // A transaction-scoped advisory lock is released by COMMIT, ROLLBACK, or the
        // connection dying with its pod — a crash never leaves it held (a named queue would).
        // The three in one round trip (a simple query of three statements, the key quoted by pg).
        await client.query(
          `BEGIN; SET LOCAL idle_in_transaction_session_timeout = '${STEP_IDLE_LIMIT}'; SELECT pg_advisory_xact_lock(hashtextextended(${client.escapeLiteral(`cca-step:${key}`)}, 0))`,
        );
        const out = await runStep(controller, stepStore(), now(), random, subject);
        if (!out.ok) {
          await client.query('ROLLBACK');
          return out;
        }
        // A step with refused writes commits its other writes and is backed off: its timer
        // is the book's backoff, not the step's own "soon".
        const at = out.refused ? book.settle(key, out, now(), random) : out.wake.at;
        if (at !== undefined) await addJobs(client, [{ ...stepJob(controller, subject), key: `${key}:timer`, runAt: at }]);
        await client.query('COMMIT');
        return out;
      } catch (e) {
        // The transaction around the step failed (BEGIN, the lock, the timer job, COMMIT).
        await client.query('ROLLBACK').catch(() => undefined);
        return stepFailure(controller, pgFailure(e, 'the job database'));
      }
    }).catch((e: unknown) => stepFailure(controller, pgFailure(e, 'the job database'))); // no connection at all
    opts.metrics?.step({ controller: name, ...(subject !== undefined ? { subject } : {}), ...stepResult(out), ms: performance.now() - started });
    // Booked and reported as in every driver; the retry time it answers is graphile-worker's
    // to choose here (its own backoff, kept in the job's row, so any pod may take the retry).
    if (!(out.ok && out.refused)) book.settle(key, out, now(), random);
    if (!out.ok) throw new ReportedFailure(out.diagnostic.message);
  };

  const fanoutTask: Task = async (payload, helpers) => {
    const controller = byName.get((payload as { controller: string }).controller);
    if (!controller?.subjects) return;
    // Reported like a step's failure: the store down (CCA-E0403) or a bug in the listing (CCA-E0404).
    const fail = (e: unknown) => failReported(stepFailure(controller, e).diagnostic);
    const subjects = await controller.subjects(stepStore()).catch(fail);
    opts.metrics?.fanout?.({ controller: controller.name, subjects: subjects.length });
    await helpers.withPgClient((client) => addJobsAlone(client, subjects.map((subject) => stepJob(controller, subject)))).catch((e: unknown) => fail(pgFailure(e, 'the job database')));
  };

  const m = opts.maintenance;
  const every = (task: string, ms: number, work: () => Promise<unknown>): Task =>
    async (_payload, helpers) => {
      try {
        await work();
      } catch (e) {
        report(pgFailure(e, 'the job database').diagnostic); // a refused connection is an outage (E0111), not a bug
      }
      // Next run, whatever happened: upkeep must never stop for good (a failure here is
      // retried by graphile-worker, and the watchdog re-adds a lost upkeep job).
      await helpers
        .withPgClient((client) => addJobsAlone(client, [upkeepJob(task, now() + ms)]))
        .catch((e: unknown) => failReported(pgFailure(e, 'the job database').diagnostic));
    };
  const maintenanceTasks: Record<string, Task> = m
    ? {
        [LEASE_TASK]: every(LEASE_TASK, m.leaseEveryMs ?? LEASE_UPKEEP_MS, () => m.store.expireLeases()),
        [COMPACT_TASK]: every(COMPACT_TASK, m.compactEveryMs ?? 60_000, () => compactOnce(m.store, m.compaction)),
      }
    : {};

  // run() would migrate a missing or old job schema itself (a server has migrated or checked
  // it already, so this applies nothing there); the task rows need the schema first.
  await runMigrations({ pgPool: opts.pool, logger });
  await retryingAborted(() => registerTasks(opts.pool, [STEP_TASK, FANOUT_TASK, ...Object.keys(maintenanceTasks)]));

  // The server migrates (or, with --no-migrate, checks) graphile-worker's schema first
  // (jobs/graphile-migrate.ts); run() reads its migration table again and applies nothing.
  const runner: Runner = await run({
    pgPool: opts.pool,
    taskList: { [STEP_TASK]: stepTask, [FANOUT_TASK]: fanoutTask },
    concurrency: opts.concurrency ?? 4,
    pollInterval: opts.pollIntervalMs ?? 200,
    noHandleSignals: true,
    useNodeTime: true,
    logger,
  });
  // Upkeep gets a runner of its own: a worker only takes the tasks it knows, so busy
  // controllers can never starve lease expiry (a late reaper would look like an outage).
  const upkeep: Runner | undefined = m
    ? await run({
        pgPool: opts.pool,
        taskList: maintenanceTasks,
        concurrency: 1,
        pollInterval: opts.pollIntervalMs ?? 200,
        noHandleSignals: true,
        useNodeTime: true,
        logger,
      })
    : undefined;

  // The upkeep jobs reschedule themselves from inside their run: a pod that dies while it
  // runs one leaves it locked for graphile's job expiry (4 h), and with it lease expiry and
  // compaction. Every pod re-adds them often; a job locked by a dead pod then loses its key
  // and a fresh one runs at once, while a pending one keeps its time (preserve run_at).
  const watchdog = m
    ? setInterval(() => {
        void opts.pool
          .connect()
          .then(async (client) => {
            try {
              await addJobsAlone(client, [LEASE_TASK, COMPACT_TASK].map((task) => upkeepJob(task)), 'graphile_worker', true);
            } finally {
              client.release();
            }
          })
          .catch((e: unknown) => report(pgFailure(e, 'the job database').diagnostic));
      }, m.watchdogEveryMs ?? 5_000)
    : undefined;
  watchdog?.unref();

  const kickAll = async () => {
    const client = await opts.pool.connect();
    try {
      const jobs: JobSpec[] = [];
      for (const c of opts.controllers) {
        jobs.push(c.subjectOf ? fanoutJob(c) : stepJob(c, undefined));
      }
      if (m) {
        // Upkeep jobs are keyed: starting them again only moves the one pending run.
        for (const task of [LEASE_TASK, COMPACT_TASK]) jobs.push(upkeepJob(task));
      }
      await addJobsAlone(client, jobs);
    } finally {
      client.release();
    }
  };

  // After a job it could not release: that job stays locked until graphile-worker's lock
  // expiry, and with it, perhaps, a step's timer. Enqueueing every controller again (as at
  // start) gives each step a fresh job (a locked job loses its key to the new one), and every
  // step schedules its own timer again. Tried until the database takes it.
  let resync: ReturnType<typeof setInterval> | undefined;
  let stopped = false;
  const resyncSoon = () => {
    if (resync || stopped) return;
    let busy = false;
    resync = setInterval(() => {
      if (busy) return;
      busy = true;
      kickAll()
        .then(() => {
          clearInterval(resync);
          resync = undefined;
          opts.onResync?.();
        })
        .catch(() => undefined) // the database is still away: the next tick tries again
        .finally(() => (busy = false));
    }, RESYNC_EVERY_MS);
    resync.unref();
  };

  return {
    async stop() {
      stopped = true;
      clearInterval(watchdog);
      clearInterval(resync);
      await Promise.all([runner.stop(), upkeep?.stop()]);
    },
    kickAll,
    absorbRejection(reason) {
      if (!isJobReleaseFailure(reason)) return false;
      report(new CcaError('CCA-E0424', { reason: reason.message }).diagnostic);
      resyncSoon();
      return true;
    },
  };
}

/** A failing store is reported once per distinct problem, not once per step. */
function reportOnce(sink: ((d: Diagnostic) => void) | undefined): (d: Diagnostic) => void {
  let last = '';
  return (d) => {
    const k = `${d.code} ${d.message}`;
    if (k === last) return;
    last = k;
    sink?.(d);
  };
}
