import path from 'node:path';
import { startEmbeddedPostgres, type RunningPostgres } from '../db/postgres/embedded.js';
import { createDatabase, freePort, postgresSource, startContainerPostgres, type PostgresSource } from '../test/support/postgres-server.js';
import { TcpGate } from './tcp-gate.js';

/** A demo's Postgres: a database of its own, and a way to take it down for a while. */
export interface DemoPostgres {
  url: string;
  name: string;
  source: PostgresSource;
  /** Down for `ms`, then back on the same URL; `whileDown` runs in the middle of the outage. */
  outage(ms: number, whileDown: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An embedded Postgres in the work dir, stopped and started again for an outage. */
async function embedded(dir: string): Promise<DemoPostgres> {
  const port = await freePort();
  const start = () => startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port, persistent: true, noSync: true });
  let pg: RunningPostgres = await start();
  return {
    url: pg.url,
    name: `an embedded Postgres on :${port}`,
    source: 'embedded',
    async outage(ms, whileDown) {
      await pg.stop();
      await sleep(ms - 500);
      await whileDown();
      pg = await start();
    },
    stop: () => pg.stop(),
  };
}

/**
 * A database of the demo's own on a server it does not stop (DATABASE_URL: someone else's;
 * a container: shared with nothing, but reached through a mapped port), behind a TcpGate:
 * an outage closes the gate, so the pod meets refused connections as from a stopped server.
 */
async function gated(source: PostgresSource, adminUrl: string, label: string, stopServer: () => Promise<void>): Promise<DemoPostgres> {
  const db = await createDatabase(adminUrl, label);
  const target = new URL(db.url);
  const gate = new TcpGate(target.hostname, Number(target.port || 5432));
  const port = await gate.open();
  const url = new URL(db.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    name: `database ${target.pathname.slice(1)} on ${source === 'DATABASE_URL' ? `DATABASE_URL's server (${target.host})` : `a Postgres container (${target.host})`}, through :${port}`,
    source,
    async outage(ms, whileDown) {
      await gate.close();
      await sleep(ms - 500);
      await whileDown();
      await gate.open();
    },
    async stop() {
      await gate.close();
      await db.drop().catch(() => undefined);
      await stopServer();
    },
  };
}

/** The demos' Postgres in the harness order: DATABASE_URL → Testcontainers → embedded. */
export async function demoPostgres(dir: string, label: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<DemoPostgres> {
  const source = await postgresSource(env);
  if (source === 'DATABASE_URL') return await gated(source, env.DATABASE_URL!, label, async () => undefined);
  if (source === 'testcontainers') {
    const c = await startContainerPostgres();
    try {
      return await gated(source, c.url, label, c.stop);
    } catch (e) {
      await c.stop().catch(() => undefined);
      throw e;
    }
  }
  return await embedded(dir);
}
