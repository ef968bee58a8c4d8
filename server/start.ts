import { setMaxListeners } from 'node:events';
import { SERVER_STEP_OPTIONS } from './step-options.js';
import { CcaError, type Diagnostic } from '../core/diagnostics/index.js';
import { loopbackNetworks, type Cidr } from '../core/model/peer-address.js';
import { openStore } from '../db/index.js';
import { pgFailure, redactUrl } from '../db/postgres/errors.js';
import { createPool } from '../db/postgres/pool.js';
import { PostgresStore } from '../db/postgres/store.js';
import { readJobQueue } from '../db/postgres/sql/readJobQueue.js';
import { runForLeader } from '../db/etcd/election.js';
import type { SqliteStore } from '../db/sqlite/store.js';
import { interactiveLane, type Store } from '../db/store.js';
import { controllers as allControllers, type ControllerOptions } from '../jobs/controllers/index.js';
import { startDriver } from '../jobs/driver.js';
import { jobsPoolSize, startGraphileDriver } from '../jobs/graphile-driver.js';
import { checkJobsSchema, migrateJobs } from '../jobs/graphile-migrate.js';
import { why } from '../jobs/decisions/why.js';
import { jobHook } from '../jobs/job-hook.js';
import { compactOnce } from '../jobs/maintenance.js';
import { startStepMirror } from '../jobs/step-mirror.js';
import { createApp } from '../handlers/app.js';
import { ensureTokens, type BootstrapTokens } from '../handlers/auth.js';
import { defaultLimits, type ServerLimits } from '../handlers/deps.js';
import { ServerMetrics } from '../handlers/metrics.js';
import { requestIdGenerator } from '../handlers/request-id.js';
import { SecretBox, type SecretKey } from '../handlers/secret-box.js';
import { InFlight } from '../handlers/inflight.js';
import { listen } from '../handlers/serve.js';
import { silentLogger, type Logger } from './log.js';
import { graphileLog, stepLog } from './step-log.js';
import { oneReportPerOutage, watchStoreHealth } from './store-health.js';
import { loadServerTls } from './tls.js';

/** Jobs a scrape reads of graphile-worker's queue at most (docs/observability.md). */
const QUEUE_SCAN_LIMIT = 10_000;

export interface ServerConfig {
  /** memory:, sqlite:FILE, postgres://…, etcd://host:port/prefix, etcd+https://host:port/prefix?ca=… */
  store: string;
  port: number;
  host: string;
  openReads: boolean;
  adminToken?: string;
  joinToken?: string;
  /** Controller steps this pod runs at once (Postgres) — 0 runs no controllers on this pod. */
  workers: number;
  /** Postgres: the store's pool (default 10); graphile-worker's follows `workers` (jobsPoolSize). */
  poolSize?: number;
  /** Postgres: the bound of the pod's read mirror in MiB (default 512); 0 = none, everything reads the database. */
  mirrorMib?: number;
  /** Postgres and SQLite: apply no migration; refuse a schema that is behind (CCA-E0151). */
  noMigrate?: boolean;
  version: string;
  /** etcd: the leader election's lease TTL (default 10 s): a killed leader is replaced within it. */
  leaderTtlSeconds?: number;
  /** etcd: this pod's value in the election (default host/pid). */
  leaderValue?: string;
  onDiagnostic?: (d: Diagnostic) => void;
  /** Controller tuning (tests: e.g. a short autoscaler sync period); defaults otherwise. */
  controllers?: ControllerOptions;
  /** The store answers again after a reported failure. */
  onRecovered?: () => void;
  /** On stop: how long /readyz fails before the pod stops listening (a load balancer's probe period); default 0. */
  drainDelayMs?: number;
  /** On stop: how long requests in flight may take to finish before connections are cut; default 10 s. */
  shutdownGraceMs?: number;
  /** Keys that seal secret values at rest (the first seals new values); none = specs with secrets are refused. */
  secretKeys?: SecretKey[];
  /** Networks an agent's advertised peer address may lie in besides its registration source (default: loopback). */
  peerNetworks?: Cidr[];
  /** Serve HTTPS with this PEM certificate and key (file paths, read and checked at start). */
  tlsCert?: string;
  tlsKey?: string;
  /** Bounds on bodies, long polls, watches, streams per credential and node writes (`defaultLimits` otherwise). */
  limits?: ServerLimits;
  /** The pod's logger (server/log.ts): requests, controller steps, graphile-worker; absent = silent. */
  log?: Logger;
}

export interface RunningServer {
  url: string;
  store: Store;
  /** Tokens this start created (first start only): print them once. */
  tokens: BootstrapTokens;
  /** Whether this pod runs the in-process driver now (etcd: the elected leader; Postgres: never). */
  leading(): boolean;
  /** A promise rejection nobody handled: true when a part of the pod recovers from it (server/rejections.ts). */
  absorbRejection(reason: unknown): boolean;
  stop(): Promise<void>;
}

/**
 * One server pod: the HTTP API over the store, and the controllers — as graphile-worker
 * jobs on Postgres (any number of pods share them), or the in-process driver on the
 * other backends. Nothing else is kept in memory that another pod would need.
 */
export async function startServer(cfg: ServerConfig): Promise<RunningServer> {
  const controllers = allControllers({ ...SERVER_STEP_OPTIONS, ...cfg.controllers });
  // The health probe and the drivers each meet a failing store: the pod reports it once.
  const outage = oneReportPerOutage(cfg.onDiagnostic ?? (() => undefined));
  const report = (d: Diagnostic) => outage.report(d);
  const metrics = new ServerMetrics();
  metrics.collectProcessDefaults();
  const log = cfg.log ?? silentLogger();
  const steps = stepLog(metrics, log);
  if ((cfg.tlsCert === undefined) !== (cfg.tlsKey === undefined)) {
    throw new CcaError('CCA-E0603', { where: 'the server setting tls', reason: '--tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)' });
  }
  // Checked before the store opens: a wrong file fails at once, with nothing to undo.
  const tls = cfg.tlsCert !== undefined && cfg.tlsKey !== undefined ? loadServerTls(cfg.tlsCert, cfg.tlsKey) : undefined;
  const stops: (() => Promise<void>)[] = [];
  const drain = new AbortController();
  const closing = new AbortController();
  // Every open watch and long poll listens on these two (removed when it ends): hundreds at
  // once is normal, bounded by the stream limits (docs/limits.md), not a leak to warn about.
  setMaxListeners(0, drain.signal, closing.signal);
  const inflight = new InFlight();
  let store: Store;
  let agentView: ((atLeast: number) => Store) | undefined;
  let peopleReads: ((lane: Store) => Store) | undefined;
  let leading = () => false;
  let absorbRejection = (_reason: unknown) => false;
  try {
    if (/^postgres(ql)?:/i.test(cfg.store)) {
      // The store's pool first: it refuses transaction pooling (CCA-E0152) and migrates the
      // store's tables (or, with --no-migrate, checks them); then graphile-worker's schema.
      const pg = await PostgresStore.open(cfg.store, {
        commitHook: jobHook(controllers),
        leaseReaperMs: 0,
        onDiagnostic: report,
        poolSize: cfg.poolSize ?? 10,
        migrate: !cfg.noMigrate,
        observer: metrics.store,
      });
      store = pg;
      stops.unshift(() => pg.close());
      const pool = createPool(cfg.store, jobsPoolSize(cfg.workers), 'jobs');
      stops.push(() => pool.end());
      // Scraped from graphile-worker's table: the queue of every pod, whichever pod is asked.
      metrics.queueSource = async () => (await readJobQueue(pool, QUEUE_SCAN_LIMIT)).map((r) => ({ ...r }));
      const target = redactUrl(cfg.store);
      await (cfg.noMigrate ? checkJobsSchema(pool, target) : migrateJobs(pool, target)).catch((e: unknown) => {
        throw pgFailure(e, target);
      });
      // The pod's read mirror: its controller steps, people's requests and the agents' hot routes read there.
      const mirrorMib = cfg.mirrorMib ?? 512;
      const mirror = mirrorMib > 0
        ? startStepMirror(pg, { maxBytes: mirrorMib * 2 ** 20, onDiagnostic: report, onRead: (way) => metrics.mirrorReads.inc({ way }) })
        : undefined;
      if (mirror) {
        stops.unshift(() => mirror.close()); // after the driver (unshifted below), before the store
        metrics.mirrorSource = () => mirror.status();
        agentView = (atLeast) => mirror.reads(pg, Math.max(pg.knownHead(), atLeast));
        peopleReads = (lane) => mirror.consistent(lane);
      }
      if (cfg.workers > 0) {
        const driver = await startGraphileDriver({
          pool,
          store: pg,
          ...(mirror ? { mirror } : {}),
          controllers,
          concurrency: cfg.workers,
          metrics: steps,
          log: graphileLog(log.child({ component: 'graphile-worker' })),
          onDiagnostic: report,
          maintenance: { store: pg },
          onResync: () => log.info('every controller enqueued again after a job the queue could not release (CCA-E0424)'),
        });
        stops.unshift(() => driver.stop());
        absorbRejection = (reason) => driver.absorbRejection(reason);
        await driver.kickAll();
      }
    } else {
      store = await openStore(cfg.store, { sqlite: { migrate: !cfg.noMigrate } });
      stops.unshift(() => store.close());
      if (cfg.workers > 0) {
        // One pod per SQLite file runs the controllers: a second refuses (CCA-E0125)
        // rather than silently running two drivers.
        if ('claimDriver' in store) {
          const claim = (store as SqliteStore).claimDriver();
          stops.unshift(async () => claim.release());
        }
        const s = store;
        const launch = (): (() => Promise<void>) => {
          const driver = startDriver({
            store: s,
            controllers,
            onDiagnostic: report,
            metrics: steps,
          });
          metrics.queueSource = async () => driver.queue().map((q) => ({ controller: q.controller, waiting: q.waiting, oldestSeconds: q.oldestMs / 1000 }));
          const compaction = setInterval(() => void compactOnce(s).catch(() => undefined), 60_000);
          compaction.unref();
          return async () => {
            metrics.queueSource = undefined;
            clearInterval(compaction);
            await driver.stop();
          };
        };
        if (/^etcd(\+https)?:/i.test(cfg.store)) {
          // Several pods may share one etcd: they elect a leader, and only it runs the
          // driver; a killed leader's campaign lease expires and the next pod takes over.
          let stopDriver: (() => Promise<void>) | undefined;
          const leadership = await runForLeader(cfg.store, {
            ttlSeconds: cfg.leaderTtlSeconds ?? 10,
            ...(cfg.leaderValue ? { value: cfg.leaderValue } : {}),
            onElected: () => {
              stopDriver ??= launch();
            },
            onDeposed: async () => {
              const stop = stopDriver;
              stopDriver = undefined;
              await stop?.();
            },
          });
          stops.unshift(() => leadership.stop());
          leading = () => leadership.isLeader();
        } else {
          stops.unshift(launch());
          leading = () => true;
        }
      }
    }
    const health = watchStoreHealth(store, outage, () => cfg.onRecovered?.(), 1_000);
    stops.unshift(async () => health.stop());
    const tokens = await ensureTokens(store, {
      ...(cfg.adminToken ? { admin: cfg.adminToken } : {}),
      ...(cfg.joinToken ? { join: cfg.joinToken } : {}),
    });
    const app = createApp({
      store,
      ...(agentView ? { agentView } : {}),
      ...(peopleReads ? { peopleReads } : {}),
      metrics,
      limits: cfg.limits ?? defaultLimits,
      newRequestId: requestIdGenerator(),
      version: cfg.version,
      log: log.child({ component: 'http' }),
      auth: { openReads: cfg.openReads },
      ...(cfg.secretKeys ? { secrets: new SecretBox(cfg.secretKeys) } : {}),
      draining: drain.signal,
      closing: closing.signal,
      inflight,
      peerNetworks: cfg.peerNetworks ?? loopbackNetworks(),
      why: (kind, name) => why(interactiveLane(store), kind, name), // a person asks: the interactive lane
    });
    const http = await listen(app, { port: cfg.port, host: cfg.host, ...(tls ? { tls } : {}) });
    // First: long polls answer at once, the server stops accepting, requests in flight get
    // their grace; only once every handler is done do the drivers and the store close.
    const graceMs = cfg.shutdownGraceMs ?? 10_000;
    stops.unshift(async () => {
      closing.abort();
      await http.close(graceMs);
      await inflight.idle(graceMs);
    });
    return {
      url: http.url,
      store,
      tokens,
      leading: () => leading(),
      absorbRejection: (reason) => absorbRejection(reason),
      stop: async () => {
        // Not ready first (a load balancer stops sending), watch streams told to reconnect
        // elsewhere, then long polls answered and requests in flight given their grace;
        // the store closes last.
        drain.abort();
        if (cfg.drainDelayMs) await new Promise((r) => setTimeout(r, cfg.drainDelayMs));
        for (const s of stops) await s().catch(() => undefined);
      },
    };
  } catch (e) {
    for (const s of stops) await s().catch(() => undefined);
    throw e;
  }
}
