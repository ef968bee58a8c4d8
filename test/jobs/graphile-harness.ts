import type { Diagnostic } from '../../core/diagnostics/index.js';
import type { MirrorReadWay } from '../../db/mirror.js';
import { createPool } from '../../db/postgres/pool.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { controllers, type ControllerOptions } from '../../jobs/controllers/index.js';
import { startGraphileDriver } from '../../jobs/graphile-driver.js';
import { jobHook } from '../../jobs/job-hook.js';
import { startStepMirror } from '../../jobs/step-mirror.js';
import { createTestDatabase } from '../support/databases.js';
import { postgresEvidence } from '../support/pod-evidence.js';

/**
 * A database of its own with the real controllers running as graphile-worker jobs, and a
 * store whose commits enqueue them. Each close is pushed on `cleanups` (run them in reverse).
 * `diagnostics` holds what the steps and the store reported (a test's evidence when a wait
 * times out: a step that failed is retried on graphile-worker's backoff, seconds later).
 */
export async function graphileCluster(name: string, cleanups: (() => Promise<void>)[], opts: ControllerOptions = {}) {
  const db = await createTestDatabase(name);
  cleanups.push(db.drop);
  const list = controllers({ retention: false, ...opts });
  const pool = createPool(db.url);
  cleanups.push(() => pool.end());
  const diagnostics: string[] = [];
  const onDiagnostic = (d: Diagnostic) => void diagnostics.push(`${new Date().toISOString()} ${d.code} ${d.message}`);
  const store = await PostgresStore.open(db.url, { commitHook: jobHook(list), onDiagnostic });
  cleanups.push(() => store.close());
  // As a server pod runs them: steps read through the pod's read mirror (jobs/step-mirror.ts).
  const reads = new Map<MirrorReadWay, number>();
  const mirror = startStepMirror(store, { onDiagnostic, onRead: (way) => reads.set(way, (reads.get(way) ?? 0) + 1) });
  cleanups.push(() => mirror.close());
  const driver = await startGraphileDriver({ pool, store, mirror, controllers: list, pollIntervalMs: 100, concurrency: 2, onDiagnostic });
  cleanups.push(() => driver.stop());
  /** For `withEvidence`: the diagnostics, graphile-worker's jobs and the database's sessions. */
  const evidence = async () => [`diagnostics (${diagnostics.length}):`, ...diagnostics.slice(-30), await postgresEvidence(db.url)].join('\n');
  return { store, driver, mirror, reads, diagnostics, evidence };
}
