import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A job queue as the server's driver sees it: due, untaken steps by controller. */
export interface QueueDepth {
  controller: string;
  waiting: number;
  oldestSeconds: number;
}

/**
 * One registry per server (not prom-client's global one), so tests and pods never share
 * counters. Names follow Prometheus conventions: `cca_` prefix, base units (`_seconds`),
 * `_total` on counters; docs/observability.md lists them and deploy/grafana-dashboard.json
 * shows them.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  /** The job queue, read at scrape time (the composition root sets it: graphile-worker's table, or the in-process driver). */
  queueSource: (() => Promise<QueueDepth[]>) | undefined;
  readonly requests = new Counter({
    name: 'cca_http_requests_total',
    help: 'HTTP requests by route, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'cca_http_request_duration_seconds',
    help: 'HTTP request latency by route (long polls and watches excluded).',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly watchers = new Gauge({
    name: 'cca_watchers',
    help: 'Open watch streams and long polls on this pod.',
    registers: [this.registry],
  });
  /** What the pod's watchers hold, read when scraped (handlers/limits/pod-limits.ts sets the source). */
  private watchBytesSource: () => number = () => 0;
  readonly watchQueuedBytes: Gauge = new Gauge({
    name: 'cca_watch_queued_bytes',
    help: 'Bytes of watch frames this pod holds for its watchers, not yet written to their sockets.',
    registers: [this.registry],
    collect: (): void => this.watchQueuedBytes.set(this.watchBytesSource()),
  });
  /** The pod's shared watch feeds, read when scraped (handlers/routes/watch.ts sets the source). */
  private watchFeedsSource: () => { feeds: number; joined: number } = () => ({ feeds: 0, joined: 0 });
  readonly watchFeeds: Gauge = new Gauge({
    name: 'cca_watch_feeds',
    help: 'Prefixes this pod follows with one shared store watch (handlers/watch/shared-feeds.ts).',
    registers: [this.registry],
    collect: (): void => this.watchFeeds.set(this.watchFeedsSource().feeds),
  });
  readonly watchJoined: Gauge = new Gauge({
    name: 'cca_watch_joined',
    help: 'Watch streams fed by a shared feed; the rest of cca_watchers read the store on their own (behind, or held at a bound).',
    registers: [this.registry],
    collect: (): void => this.watchJoined.set(this.watchFeedsSource().joined),
  });
  readonly watchCuts = new Counter({
    name: 'cca_watch_cuts_total',
    help: 'Watch streams cut at a byte bound, by bound (watcher or pod).',
    labelNames: ['bound'] as const,
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: 'cca_limit_refusals_total',
    help: 'Requests refused by a pod limit, by code (CCA-E0642 streams per credential, CCA-E0643 node write rate).',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly storeRevision = new Gauge({
    name: 'cca_store_revision',
    help: 'The store revision last seen by this pod.',
    registers: [this.registry],
  });
  readonly jobRuns = new Counter({
    name: 'cca_job_runs_total',
    help: 'Controller step runs by controller and result.',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  });
  readonly stepDeferrals = new Counter({
    name: 'cca_controller_step_deferrals_total',
    help: 'Step jobs put off because the same step was running on another worker of the pod, by controller (graphile driver).',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly stepDuration = new Histogram({
    name: 'cca_controller_step_duration_seconds',
    help: 'Controller step durations.',
    labelNames: ['controller'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [this.registry],
  });

  readonly commitBatch = new Histogram({
    name: 'cca_store_commit_batch_size',
    help: 'Client operations per committed write batch (one Postgres transaction; Postgres store only).',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });
  readonly commitDuration = new Histogram({
    name: 'cca_store_commit_duration_seconds',
    help: 'Write batch latency, connection to COMMIT (Postgres store only).',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly commitWays = new Counter({
    name: 'cca_store_commit_batches_total',
    help: "Committed write batches by way: planned from a snapshot without a lock, or under the revision counter's lock (leases, or another writer overtook the plan; Postgres store only).",
    labelNames: ['way'] as const,
    registers: [this.registry],
  });
  readonly poolWait = new Histogram({
    name: 'cca_store_pool_wait_seconds',
    help: "How long the store's reads and write batches waited for a connection from its pool (Postgres store only).",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly watchLag = new Histogram({
    name: 'cca_watch_lag_revisions',
    help: 'How far behind the head a watcher was when it read (revisions; Postgres store only).',
    buckets: [0, 1, 2, 5, 10, 50, 100, 1000, 10000],
    registers: [this.registry],
  });
  readonly ringHits = new Counter({
    name: 'cca_watch_ring_hits_total',
    help: "Watch reads served from the watch hub's ring of recent revisions (Postgres store only).",
    registers: [this.registry],
  });
  readonly ringMisses = new Counter({
    name: 'cca_watch_ring_misses_total',
    help: 'Watch reads that went to the log table: a watcher behind the ring (Postgres store only).',
    registers: [this.registry],
  });
  readonly mirrorReads = new Counter({
    name: 'cca_mirror_reads_total',
    help: "Reads of controller steps, people's requests and the agents' hot routes (assignments, observations, node credentials) by where they were served: the pod's read mirror, or the store (uncovered prefix, mirror loading or off, mirror behind, or an old revision; Postgres store only).",
    labelNames: ['way'] as const,
    registers: [this.registry],
  });
  readonly mirrorBytes: Gauge = new Gauge({
    name: 'cca_mirror_bytes',
    help: "What the pod's read mirror holds (keys and values as in memory); 0 while it is loading or off.",
    registers: [this.registry],
    collect: () => this.mirrorBytes.set(this.mirrorSource?.().bytes ?? 0),
  });
  /** The read mirror's size, once the server has one. */
  mirrorSource: (() => { bytes: number }) | undefined;
  readonly jobsWaiting: Gauge<'controller'> = new Gauge({
    name: 'cca_jobs_waiting',
    help: "Controller steps due and not yet taken by a worker, by controller (graphile-worker's queue, or the in-process driver's).",
    labelNames: ['controller'] as const,
    registers: [this.registry],
    collect: async () => this.fill(this.jobsWaiting, (r) => r.waiting),
  });
  readonly jobsOldest: Gauge<'controller'> = new Gauge({
    name: 'cca_jobs_oldest_waiting_seconds',
    help: 'How long the oldest waiting step of each controller has been due.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
    collect: async () => this.fill(this.jobsOldest, (r) => r.oldestSeconds),
  });
  /** The queue read of the scrape in progress: prom-client collects metrics concurrently, and both gauges share one read. */
  private queueRead: Promise<QueueDepth[]> | undefined;

  /** Node's own (process_cpu_seconds_total, process_resident_memory_bytes, nodejs_eventloop_lag_seconds…): once per process, by the server. */
  collectProcessDefaults(): void {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The Postgres store's observer (db/postgres/observer.ts). */
  readonly store = {
    committed: (info: { batchSize: number; seconds: number; way: 'snapshot' | 'locked' }) => {
      this.commitWays.inc({ way: info.way });
      this.commitBatch.observe(info.batchSize);
      this.commitDuration.observe(info.seconds);
    },
    poolWait: (info: { seconds: number }) => this.poolWait.observe(info.seconds),
    watchRead: (info: { lagRevisions: number; ringHit: boolean }) => {
      this.watchLag.observe(info.lagRevisions);
      (info.ringHit ? this.ringHits : this.ringMisses).inc();
    },
  };

  /** A queue gauge from the scrape's one read; a failed read leaves it empty (the scrape itself still answers). */
  private async fill(gauge: Gauge<'controller'>, value: (r: QueueDepth) => number): Promise<void> {
    this.queueRead ??= (this.queueSource?.() ?? Promise.resolve([])).catch(() => []).finally(() => (this.queueRead = undefined));
    const rows = await this.queueRead;
    gauge.reset();
    for (const r of rows) gauge.set({ controller: r.controller }, value(r));
  }

  trackWatchBytes(source: () => number): void {
    this.watchBytesSource = source;
  }

  trackWatchFeeds(source: () => { feeds: number; joined: number }): void {
    this.watchFeedsSource = source;
  }

  /** A driver's step (jobs/step-runner.ts `StepMetrics`): counted by result, timed. */
  step(info: { controller: string; ok: boolean; ms: number }): void {
    this.jobRuns.inc({ controller: info.controller, result: info.ok ? 'ok' : 'error' });
    this.stepDuration.observe({ controller: info.controller }, info.ms / 1000);
  }
}
