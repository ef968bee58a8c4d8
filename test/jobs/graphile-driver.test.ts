import { afterAll, expect, test } from 'vitest';
import { createPool } from '../../db/postgres/pool.js';
import { PostgresStore } from '../../db/postgres/store.js';
import type { Diagnostic } from '../../core/diagnostics/types.js';
import type { Controller } from '../../jobs/controller.js';
import { startGraphileDriver } from '../../jobs/graphile-driver.js';
import { addJobs, jobHook, jobsForChanges, stepJob } from '../../jobs/job-hook.js';
import { migrateJobs } from '../../jobs/graphile-migrate.js';
import type { StepInfo } from '../../jobs/step-runner.js';
import { waitFor } from '../support/wait.js';
import { createTestDatabase } from '../support/databases.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Copies /src/<s> to /dst/<s>, one job per subject; compares the source it read. */
const mirror: Controller = {
  name: 'mirror',
  watches: ['/src/'],
  subjectOf: (key) => key.slice('/src/'.length) || undefined,
  subjects: async (store) => (await store.range({ prefix: '/src/', keysOnly: true })).kvs.map((k) => k.key.slice(5)),
  async reconcile({ store, subject }) {
    const src = await store.get(`/src/${subject}`);
    const dst = await store.get(`/dst/${subject}`);
    if (!src || src.value === dst?.value) return {};
    await store.txn({
      compare: [{ key: src.key, target: 'modRevision', op: '=', value: src.modRevision }],
      success: [{ put: { key: `/dst/${subject}`, value: src.value } }],
    });
    return {};
  },
};

/** Counts to 3 on timers alone. */
const ticker: Controller = {
  name: 'ticker',
  watches: [],
  async reconcile({ store, now }) {
    const n = Number((await store.get('/ticks'))?.value ?? 0);
    if (n >= 3) return {};
    await store.put('/ticks', String(n + 1));
    return { at: now + 100 };
  },
};

/** Writes, then fails: like in every driver, its write stays, and the failure is reported and retried. */
const broken: Controller = {
  name: 'broken',
  watches: ['/trigger'],
  async reconcile({ store }) {
    await store.put('/partial', 'x');
    throw new Error('step failed after writing');
  },
};

test('changed keys route to one job per controller and subject, or a fan-out', () => {
  const jobs = jobsForChanges([mirror, ticker, broken], ['/src/a', '/src/a', '/src/b', '/src/', '/trigger', '/other'].map((key) => ({ key, deleted: false })));
  expect(jobs.map((j) => `${j.task} ${j.key}`)).toEqual(['cca-step mirror:a', 'cca-step mirror:b', 'cca-fanout mirror:*', 'cca-step broken']);
});

/** A database of its own, a graphile driver over it running `controllers`, and a store that wakes them; all closed after the test. */
async function graphileCluster(name: string, controllers: Controller[], extra: Partial<Parameters<typeof startGraphileDriver>[0]> = {}) {
  const db = await createTestDatabase(name);
  cleanups.push(db.drop);
  const pool = createPool(db.url);
  cleanups.push(() => pool.end());
  const reports: Diagnostic[] = [];
  const steps: StepInfo[] = [];
  const deferred: string[] = [];
  const lines: { level: string; message: string }[] = []; // graphile-worker's own
  const store = await PostgresStore.open(db.url, { commitHook: jobHook(controllers) });
  cleanups.push(() => store.close());
  const driver = await startGraphileDriver({
    pool,
    store,
    controllers,
    pollIntervalMs: 100,
    concurrency: 2,
    onDiagnostic: (d) => reports.push(d),
    metrics: { step: (i) => steps.push(i), deferred: (i) => void deferred.push(i.controller) },
    log: (level, message) => void lines.push({ level, message }),
    ...extra,
  });
  cleanups.push(() => driver.stop());
  return { store, pool, driver, reports, steps, deferred, lines };
}

test('controller steps run as graphile-worker jobs: woken in the writing transaction, timed by run_at, failures retried', async () => {
  const { store, pool, driver, reports, steps } = await graphileCluster('graphile', [mirror, ticker, broken]);

  await store.put('/src/a', '1');
  for (let i = 0; i < 20; i++) await store.put('/src/b', String(i));
  await waitFor('/dst/a = 1', () => store.get('/dst/a'), (kv) => kv?.value === '1');
  const b = await waitFor('/dst/b = 19', () => store.get('/dst/b'), (kv) => kv?.value === '19');
  expect(b?.value).toBe('19');

  await driver.kickAll();
  const ticks = await waitFor('/ticks = 3', () => store.get('/ticks'), (kv) => kv?.value === '3', 10_000);
  expect(ticks?.value).toBe('3');

  await store.put('/trigger', '1');
  // Each txn of a step commits on its own (the store's batcher): what the step wrote before
  // it failed stays, as under the in-process driver; its compares made it safe to write.
  await waitFor('/partial written by the failing step', () => store.get('/partial'));
  // graphile counts an attempt when it takes the job and writes last_error when the step fails: wait for both.
  await waitFor('the failing step run', () => pool.query(`SELECT 1 FROM graphile_worker.jobs WHERE key = 'broken' AND attempts >= 1 AND last_error IS NOT NULL`), (r) => r.rowCount === 1);
  const attempts = await pool.query<{ attempts: number; last_error: string }>(
    `SELECT attempts, last_error FROM graphile_worker.jobs WHERE task_identifier = 'cca-step' AND key = 'broken'`,
  );
  expect(attempts.rows[0]?.attempts).toBeGreaterThanOrEqual(1);
  expect(attempts.rows[0]?.last_error).toMatch(/step failed after writing/);
  // Reported as every driver reports a step's bug (jobs/step-runner.ts), and counted through the injected metrics.
  expect(reports.map((d) => d.code)).toEqual(['CCA-E0404']);
  expect(steps.filter((i) => i.controller === 'broken').map((i) => i.ok)).toContain(false);
  expect(steps.filter((i) => i.controller === 'mirror' && i.ok).length).toBeGreaterThan(0);

  // Converged: one more pass over every subject writes nothing.
  const before = await store.revision();
  await driver.kickAll();
  await new Promise((r) => setTimeout(r, 800));
  expect(await store.revision()).toBe(before);
}, 60_000);

/** A fan-out controller whose listing is broken. */
const unlistable: Controller = {
  name: 'unlistable',
  watches: ['/u/'],
  subjectOf: (key) => key.slice('/u/'.length) || undefined,
  subjects: async () => {
    throw new Error('cannot list');
  },
  reconcile: async () => ({}),
};

test("a failed fan-out is reported like a failed step; graphile-worker's own line of a failure the driver reported is not an error", async () => {
  const { store, reports, lines } = await graphileCluster('graphile-fanout-failure', [unlistable, broken]);
  await store.put('/u/', 'x'); // the prefix itself: no one subject, so a fan-out
  await store.put('/trigger', '1');
  await waitFor('both failures reported', async () => reports.map((d) => d.code), (codes) => codes.length >= 2);
  const failed = () => lines.filter((l) => l.message.startsWith('Failed task'));
  await waitFor("graphile-worker's lines of both failed jobs", async () => failed().map((l) => l.message), (m) => m.some((s) => s.includes('cca-fanout')) && m.some((s) => s.includes('cca-step')));
  expect(reports.map((d) => d.code).sort()).toEqual(['CCA-E0404', 'CCA-E0404']);
  expect(reports.find((d) => d.message.includes('unlistable'))?.message).toMatch(/cannot list/);
  // The driver's report is the failure's one line at warning or above; graphile-worker's, with its stack, is info.
  expect(failed().map((l) => l.level)).toEqual(failed().map(() => 'info'));
  expect(lines.filter((l) => l.level === 'error')).toEqual([]);
}, 60_000);

/** Writes a value too large for the store for one key and a small one for another, each in its own txn. */
const oversized: Controller = {
  name: 'oversized',
  watches: ['/go'],
  async reconcile({ store, now }) {
    let failed = 0;
    for (const [key, value] of [['/big/a', 'x'.repeat(2_000_000)], ['/big/b', 'small']] as const) {
      if ((await store.get(key))?.value === value) continue;
      if (!(await store.txn({ compare: [], success: [{ put: { key, value } }] })).succeeded) failed++;
    }
    return failed > 0 ? { at: now + 100 } : {};
  },
};

test("as a graphile job, a refused write does not roll back the step's other writes; it is reported once and backed off", async () => {
  const { store, reports, steps } = await graphileCluster('graphile-refusal', [oversized]);

  await store.put('/go', '1');
  await waitFor('/big/b written', () => store.get('/big/b'));
  await waitFor('three steps of the refusing controller', () => steps.filter((s) => s.controller === 'oversized').length >= 3, 20_000);
  expect(await store.get('/big/a')).toBeNull();
  expect(reports.map((d) => d.code)).toEqual(['CCA-E0450']);
  expect(reports[0]!.params).toMatchObject({ controller: 'oversized', subject: '/big/a' });
  // The metrics count such a step as failed, though its other writes went through.
  expect(steps.filter((s) => s.controller === 'oversized').every((s) => !s.ok)).toBe(true);
}, 60_000);

/** Writes once, then waits for the test before it writes again. */
function pausingController(): { controller: Controller; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const controller: Controller = {
    name: 'pausing',
    watches: ['/slow/go'],
    async reconcile({ store }) {
      if (await store.get('/slow/second')) return {};
      await store.put('/slow/first', 'x');
      await gate;
      await store.put('/slow/second', 'x');
      return {};
    },
  };
  return { controller, release };
}

test('writers do not wait on a step: its writes commit one by one, and the revision lock is free between them', async () => {
  const { controller, release } = pausingController();
  const { store } = await graphileCluster('graphile-nolock', [controller]);
  await store.put('/slow/go', '1');
  // The step has written and is paused: its write is visible outside, and a user's write commits now.
  await waitFor('the paused step\'s first write', () => store.get('/slow/first'));
  const user = await store.put('/user', '1');
  expect(await store.get('/slow/second')).toBeNull();
  release();
  const second = await waitFor('the step\'s second write', () => store.get('/slow/second'));
  expect(second!.modRevision).toBeGreaterThan(user.revision);
}, 60_000);

test("a worker does not wait for its own pod's run of the same step: the job is put off, the run's end brings it forward", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const runs: { start: number; end?: number }[] = [];
  const held: Controller = {
    name: 'held',
    watches: ['/held/'],
    async reconcile({ store }) {
      const run: { start: number; end?: number } = { start: performance.now() };
      runs.push(run);
      if (runs.length === 1) await gate;
      await store.put(`/held-done/${runs.length}`, 'x');
      run.end = performance.now();
      return {};
    },
  };
  const other: Controller = {
    name: 'other',
    watches: ['/other'],
    async reconcile({ store }) {
      if (!(await store.get('/other-done'))) await store.put('/other-done', 'x');
      return {};
    },
  };
  // The backstop far off: the second run comes only if the first one's end brings it forward.
  const { store, deferred } = await graphileCluster('graphile-defer', [held, other], { deferredStepMs: 600_000 });
  await store.put('/held/go', '1');
  await waitFor('the first run of held', async () => runs.length, (n) => n === 1);
  // A change while it runs: a new job for the same step, taken by the other worker before /other's job.
  await store.put('/held/go', '2');
  await store.put('/other', '1');
  // The other controller's step runs while held's first run is still paused: no worker waits on held's lock.
  await waitFor("the other controller's step, with held paused", () => store.get('/other-done'));
  expect(runs).toHaveLength(1);
  expect(deferred).toEqual(['held']);
  release();
  await waitFor('the put-off run of held', () => store.get('/held-done/2'));
  expect(runs[1]!.start).toBeGreaterThanOrEqual(runs[0]!.end!);
}, 60_000);

test('the commit hook is told which keys a transaction deleted, and a put\'s value before and after', async () => {
  const db = await createTestDatabase('commit-hook-changes');
  cleanups.push(db.drop);
  const seen: { key: string; deleted: boolean; before?: string; after?: string }[][] = [];
  const store = await PostgresStore.open(db.url, { commitHook: async (_client, changes) => void seen.push(changes) });
  cleanups.push(() => store.close());
  await store.put('/a', '1');
  await store.put('/b', '1');
  await store.delete('/a');
  await store.txn({ compare: [], success: [{ delete: { key: '/b' } }, { put: { key: '/c', value: '1' } }] });
  const lease = await store.grantLease(60);
  await store.put('/d', '1', { lease: lease.id });
  await store.revokeLease(lease.id);
  // A put over a value: both values, so a controller may pass over what it cannot act on.
  await store.put('/c', '2');
  expect(seen).toEqual([
    [{ key: '/a', deleted: false }],
    [{ key: '/b', deleted: false }],
    [{ key: '/a', deleted: true }],
    [{ key: '/b', deleted: true }, { key: '/c', deleted: false }],
    [{ key: '/d', deleted: false }],
    [{ key: '/d', deleted: true }],
    [{ key: '/c', deleted: false, before: '1', after: '2' }],
  ]);
}, 60_000);

test('two add_jobs calls meeting the same keys in opposite orders do not deadlock: addJobs orders them', async () => {
  const db = await createTestDatabase('add-jobs-order');
  cleanups.push(db.drop);
  const pool = createPool(db.url);
  cleanups.push(() => pool.end());
  await migrateJobs(pool);
  // A fan-out's subjects and a commit's changes name the same steps in different orders.
  const specs = Array.from({ length: 2_000 }, (_, i) => stepJob(mirror, `s${String(i).padStart(5, '0')}`));
  for (let round = 0; round < 4; round++) {
    await Promise.all(
      [specs, [...specs].reverse()].map(async (list) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await addJobs(client, list);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK');
          throw e;
        } finally {
          client.release();
        }
      }),
    );
  }
  const n = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM graphile_worker.jobs`);
  expect(Number(n.rows[0]!.n)).toBe(2_000);
}, 120_000);


test('a busy worker pool takes the due step of higher priority first, though it was woken later (the scheduler ahead of per-service steps)', async () => {
  let release: (() => void) | undefined;
  const started: string[] = [];
  const blocker: Controller = {
    name: 'blocker',
    watches: ['/block'],
    async reconcile({ store }) {
      started.push('blocker');
      if (await store.get('/block')) await new Promise<void>((r) => (release = r));
      return {};
    },
  };
  const plain = (name: string, priority?: number): Controller => ({
    name,
    watches: [`/${name}`],
    ...(priority !== undefined ? { priority } : {}),
    async reconcile() {
      started.push(name);
      return {};
    },
  });
  // One worker, so the order of due jobs is the order they run in.
  const { store } = await graphileCluster('graphile-priority', [blocker, plain('low'), plain('urgent', -1)], { concurrency: 1 });
  await store.put('/block', '1');
  await waitFor('the blocker holding the one worker', async () => release, (r) => r !== undefined);
  await store.put('/low', '1'); // due first
  await store.put('/urgent', '1'); // due later, ahead by priority
  release!();
  await waitFor('both steps', async () => started.length, (n) => n >= 3);
  expect(started).toEqual(['blocker', 'urgent', 'low']);
}, 60_000);

test('node judgements, then making and placing replicas, are the steps of higher priority; what follows a running replica keeps the default', async () => {
  const { controllers } = await import('../../jobs/controllers/index.js');
  const byName = new Map(controllers({ retention: false }).map((c) => [c.name, c]));
  expect(stepJob(byName.get('node')!, undefined).priority).toBe(-2);
  expect(stepJob(byName.get('scheduler')!, undefined).priority).toBe(-1);
  expect(stepJob(byName.get('replica')!, 'web').priority).toBe(-1);
  for (const name of ['endpoints', 'rollout', 'network', 'autoscaler']) expect(stepJob(byName.get(name)!, 'web').priority).toBeUndefined();
});
