import type { Db } from './db.js';

export interface QueuedJobs {
  /** The controller (or upkeep task) the jobs are for. */
  controller: string;
  /** Jobs due now that no worker has taken yet. */
  waiting: number;
  /** How long the oldest of them has been due. */
  oldestSeconds: number;
}

/**
 * graphile-worker's queue by controller: the due, untaken jobs, oldest first through its
 * own (priority, run_at) index, at most `limit` of them, so a scrape costs the same however
 * long the queue grows (a count at the limit means "at least").
 */
export async function readJobQueue(db: Db, limit: number): Promise<QueuedJobs[]> {
  const r = await db.query<QueuedJobs>(
    `SELECT coalesce(payload->>'controller', '') AS controller, count(*)::int AS waiting,
            extract(epoch FROM now() - min(run_at))::float8 AS "oldestSeconds"
       FROM (SELECT payload, run_at FROM graphile_worker._private_jobs
              WHERE is_available AND run_at <= now()
              ORDER BY priority, run_at LIMIT $1) due
      GROUP BY 1`,
    [limit],
  );
  return r.rows;
}
