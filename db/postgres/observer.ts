/**
 * What the Postgres store tells whoever watches its health (the server's metrics): a small
 * interface, so db/ imports no metrics library. Every method is optional; none may throw.
 */
export interface StoreObserver {
  /**
   * A write batch committed: how many client operations it carried, how long it took
   * (connect to COMMIT), and which way (write-batcher.ts): planned from a snapshot, or under
   * the counter's lock (`locked`: leases, or another writer overtook its plan).
   */
  committed?(info: { batchSize: number; seconds: number; way: 'snapshot' | 'locked' }): void;
  /**
   * A watcher read from the watch hub: how far behind the head it started (revisions), and
   * whether the in-memory ring of recent revisions served it (a miss reads the log table).
   */
  watchRead?(info: { lagRevisions: number; ringHit: boolean }): void;
  /**
   * A read or write batch got a connection from the store's pool: how long it waited (a new
   * connection's setup included). Long waits mean the pool (`--pool-size`) is what a request
   * queues on, not Postgres.
   */
  poolWait?(info: { seconds: number }): void;
}
