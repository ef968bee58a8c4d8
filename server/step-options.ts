import type { ControllerOptions } from '../jobs/controllers/index.js';
import type { Turn } from '../jobs/write.js';

/**
 * Txns a replica or scheduler step keeps in flight. PostgresStore commits the txns that
 * queued while its previous batch committed as one Postgres transaction, so one at a time
 * would cost a batch each: placing 3,000 replicas took 10.9 s that way (150 txns), 16 is
 * what bench:scheduler runs (docs/benchmarks.md). SQLite commits them one by one; etcd gets
 * them pipelined on its one connection. The cost: a person's write waits for a larger batch
 * (rolling apply p99 285–437 ms against 262–289 at 1, docs/benchmarks.md).
 */
export const STEP_TXN_CONCURRENCY = 16;

/** A turn of the event loop: I/O callbacks (the store's sends and results) run first. */
export const nextTurn: Turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * How a server pod runs its controllers' steps (bench:scheduler runs the same): txns in
 * flight, and the scheduler building its next txns between turns while those commit.
 */
export const SERVER_STEP_OPTIONS = { txnConcurrency: STEP_TXN_CONCURRENCY, turn: nextTurn } as const satisfies ControllerOptions;
