import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** One registry per server (not prom-client's global one), so tests and pods never share counters. */
export class ServerMetrics {
  readonly registry = new Registry();
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
  readonly stepDuration = new Histogram({
    name: 'cca_controller_step_duration_seconds',
    help: 'Controller step durations.',
    labelNames: ['controller'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [this.registry],
  });

  trackWatchBytes(source: () => number): void {
    this.watchBytesSource = source;
  }

  /** A driver's step (jobs/step-runner.ts `StepMetrics`): counted by result, timed. */
  step(info: { controller: string; ok: boolean; ms: number }): void {
    this.jobRuns.inc({ controller: info.controller, result: info.ok ? 'ok' : 'error' });
    this.stepDuration.observe({ controller: info.controller }, info.ms / 1000);
  }
}
