import type { Diagnostic } from '../core/diagnostics/index.js';
import { openStore } from '../db/index.js';
import { migrateStore } from '../db/postgres/migrate.js';
import { createPool } from '../db/postgres/pool.js';
import { PostgresStore } from '../db/postgres/store.js';
import type { SqliteStore } from '../db/sqlite/store.js';
import type { Store } from '../db/store.js';
import { controllers as allControllers } from '../jobs/controllers/index.js';
import { startDriver } from '../jobs/driver.js';
import { startGraphileDriver } from '../jobs/graphile-driver.js';
import { why } from '../jobs/decisions/why.js';
import { jobHook } from '../jobs/job-hook.js';
import { compactOnce } from '../jobs/maintenance.js';
import { createApp } from '../handlers/app.js';
import { ensureTokens, type BootstrapTokens } from '../handlers/auth.js';
import { defaultLimits } from '../handlers/deps.js';
import { ServerMetrics } from '../handlers/metrics.js';
import { requestIdGenerator } from '../handlers/request-id.js';
import { listen } from '../handlers/serve.js';

export interface ServerConfig {
  /** memory:, sqlite:FILE, postgres://…, etcd://host:port/prefix */
  store: string;
  port: number;
  host: string;
  openReads: boolean;
  adminToken?: string;
  joinToken?: string;
  /** Controller steps this pod runs at once (Postgres) — 0 runs no controllers on this pod. */
  workers: number;
  version: string;
  onDiagnostic?: (d: Diagnostic) => void;
}

export interface RunningServer {
  url: string;
  store: Store;
  /** Tokens this start created (first start only): print them once. */
  tokens: BootstrapTokens;
  stop(): Promise<void>;
}

/**
 * One server pod: the HTTP API over the store, and the controllers — as graphile-worker
 * jobs on Postgres (any number of pods share them), or the in-process driver on the
 * other backends. Nothing else is kept in memory that another pod would need.
 */
export async function startServer(cfg: ServerConfig): Promise<RunningServer> {
  const controllers = allControllers();
  const report = cfg.onDiagnostic ?? (() => undefined);
  const metrics = new ServerMetrics();
  const stops: (() => Promise<void>)[] = [];
  let store: Store;
  try {
    if (/^postgres(ql)?:/i.test(cfg.store)) {
      const pool = createPool(cfg.store, 10);
      stops.push(() => pool.end());
      await migrateStore(pool);
      const pg = await PostgresStore.open(cfg.store, { commitHook: jobHook(controllers), leaseReaperMs: 0, onDiagnostic: report });
      store = pg;
      stops.unshift(() => pg.close());
      if (cfg.workers > 0) {
        const driver = await startGraphileDriver({
          pool,
          controllers,
          concurrency: cfg.workers,
          metrics,
          onDiagnostic: report,
          maintenance: { store: pg },
        });
        stops.unshift(() => driver.stop());
        await driver.kickAll();
      }
    } else {
      store = await openStore(cfg.store);
      stops.unshift(() => store.close());
      if (cfg.workers > 0) {
        // One pod per SQLite file runs the controllers: a second refuses (CCA-E0124)
        // rather than silently running two drivers.
        if ('claimDriver' in store) {
          const claim = (store as SqliteStore).claimDriver();
          stops.unshift(async () => claim.release());
        }
        const driver = startDriver({
          store,
          controllers,
          onDiagnostic: report,
          onStep: (s) => {
            metrics.jobRuns.inc({ controller: s.controller, result: s.ok ? 'ok' : 'error' });
            metrics.stepDuration.observe({ controller: s.controller }, s.ms / 1000);
          },
        });
        stops.unshift(() => driver.stop());
        const compaction = setInterval(() => void compactOnce(store).catch(() => undefined), 60_000);
        compaction.unref();
        stops.unshift(async () => clearInterval(compaction));
      }
    }
    const tokens = await ensureTokens(store, {
      ...(cfg.adminToken ? { admin: cfg.adminToken } : {}),
      ...(cfg.joinToken ? { join: cfg.joinToken } : {}),
    });
    const app = createApp({
      store,
      metrics,
      limits: defaultLimits,
      newRequestId: requestIdGenerator(),
      version: cfg.version,
      auth: { openReads: cfg.openReads },
      why: (kind, name) => why(store, kind, name),
    });
    const http = await listen(app, { port: cfg.port, host: cfg.host });
    stops.unshift(() => http.close());
    return {
      url: http.url,
      store,
      tokens,
      stop: async () => {
        for (const s of stops) await s().catch(() => undefined);
      },
    };
  } catch (e) {
    for (const s of stops) await s().catch(() => undefined);
    throw e;
  }
}
