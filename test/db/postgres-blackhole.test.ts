import net from 'node:net';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { createClient } from '../../db/postgres/pool.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';

/**
 * A pod that vanishes without a FIN or RST (power off, partition) while it holds the revision
 * counter's lock: its packets stop, its socket stays open. A loopback proxy that stops
 * forwarding plays the partition. Without connection bounds the other writers would wait for
 * the kernel (hours); with them the server cuts the silent transaction and writes resume.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Forwards TCP to `target` until frozen; then every byte in either direction is dropped, and nothing is closed. */
async function blackholeProxy(target: { host: string; port: number }) {
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    client.on('data', (d) => void (frozen || upstream.write(d)));
    upstream.on('data', (d) => void (frozen || client.write(d)));
    for (const s of [client, upstream]) s.on('error', () => undefined);
    client.on('close', () => void (frozen || upstream.destroy()));
    upstream.on('close', () => void (frozen || client.destroy()));
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return {
    port,
    freeze: () => void (frozen = true),
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test('a lock holder that goes silent mid-transaction blocks other writers for seconds, not hours', async () => {
  const db = await createTestDatabase('blackhole');
  cleanups.push(() => db.drop());
  const store = await PostgresStore.open(db.url, { leaseReaperMs: 60_000 });
  cleanups.push(() => store.close());
  await store.put('/probe/before', 'x');

  const url = new URL(db.url);
  const proxy = await blackholeProxy({ host: url.hostname, port: Number(url.port) });
  cleanups.push(() => proxy.close());
  const viaProxy = new URL(db.url);
  viaProxy.port = String(proxy.port);
  const holder = createClient(viaProxy.toString());
  holder.on('error', () => undefined);
  await holder.connect();
  cleanups.push(() => holder.end().catch(() => undefined));
  // The lock every writer takes first, held by a pod that then vanishes.
  await holder.query('BEGIN');
  await holder.query('SELECT revision FROM cca_meta WHERE id = 1 FOR UPDATE');
  proxy.freeze();
  const observer = new pg.Client({ connectionString: db.url });
  await observer.connect();
  cleanups.push(() => observer.end());
  const holders = async () =>
    (await observer.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ccattler-listen' AND state = 'idle in transaction'`)).rows[0].n as number;
  expect(await holders()).toBe(1);

  const started = Date.now();
  await store.put('/probe/after', 'y');
  const waited = Date.now() - started;
  process.stdout.write(`blackholed lock holder: another writer committed after ${waited} ms (idle_in_transaction_session_timeout 10 s)\n`);
  expect((await store.get('/probe/after'))?.value).toBe('y');
  // The server ended the silent holder's session (that is what let the write through).
  expect(await holders()).toBe(0);
}, 120_000);
