import pg from 'pg';
import { checkPostgresUrl } from './url.js';

const INT8_OID = 20;

/** Revisions and lease ids fit in 2^53 for centuries of writes; read them as numbers. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

/** The URL's own application_name (e.g. one per pod, for pg_stat_activity) or "ccattler". */
function applicationName(url: string): string {
  try {
    return new URL(url).searchParams.get('application_name') ?? 'ccattler';
  } catch {
    return 'ccattler';
  }
}

/**
 * Every connection's bounds, so a pod that vanishes (power off, partition: no FIN, no RST)
 * while it holds the revision counter's row lock blocks the other writers for seconds, not
 * for the kernel's two hours. The decisive one is idle_in_transaction_session_timeout: a
 * holder that stops talking mid-transaction is cut by the server and its locks released
 * (test/db/postgres-blackhole.test.ts). The server's own TCP keepalives (via `options`)
 * end a session whose client is gone while a statement runs. A parameter in the URL (e.g.
 * `?statement_timeout=…`) wins over these. docs/store.md states the numbers.
 */
export const PG_BOUNDS = {
  /** Opening a connection (TCP + TLS + auth). */
  connectionTimeoutMillis: 10_000,
  /** Client-side keepalives: a dead server is noticed by the pod. */
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
  /** No statement of ours runs this long; a stuck one is cancelled, and its step retried. */
  statement_timeout: 60_000,
  /** Waiting for a lock (the revision counter, graphile's job rows, the migration lock). */
  lock_timeout: 30_000,
  /** A transaction whose client went silent releases its locks after this. */
  idle_in_transaction_session_timeout: 10_000,
  /** Server-side keepalives: a vanished client is dropped after 5 + 3 × 2 s of silence. */
  options: '-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3',
} as const;

/**
 * The URL without its application_name (pg lets the URL's parameters win over the
 * config's, so the purpose suffix would be lost). Textual, so other parameters keep
 * exactly their encoding.
 */
function withoutApplicationName(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const [query, hash] = url.slice(at + 1).split('#', 2) as [string, string | undefined];
  const kept = query.split('&').filter((p) => p !== '' && !p.startsWith('application_name='));
  return `${url.slice(0, at)}${kept.length ? `?${kept.join('&')}` : ''}${hash !== undefined ? `#${hash}` : ''}`;
}

/**
 * A pool of at most `max` connections. `purpose` suffixes the application_name, so
 * pg_stat_activity tells a pod's pools apart: `NAME` (the store), `NAME-jobs`
 * (graphile-worker), `NAME-listen` (the store's LISTEN connection), NAME being the URL's
 * application_name or "ccattler".
 */
export function createPool(url: string, max = 10, purpose?: 'jobs' | 'migrate'): pg.Pool {
  checkPostgresUrl(url);
  const name = purpose ? `${applicationName(url)}-${purpose}` : applicationName(url);
  const pool = new pg.Pool({ ...PG_BOUNDS, connectionString: withoutApplicationName(url), max, types, application_name: name });
  // An idle client that loses its connection must not crash the process; the next
  // query on the pool gets a fresh connection.
  pool.on('error', () => undefined);
  // A checked-out client whose connection dies between queries emits 'error'; the next
  // query on it fails and is classified by whoever runs it.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export function createClient(url: string): pg.Client {
  return new pg.Client({ ...PG_BOUNDS, connectionString: withoutApplicationName(url), types, application_name: `${applicationName(url)}-listen` });
}

type CheckoutCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

/**
 * Tells `seen` how long each checkout from `pool` waited for its connection. pg-pool's own
 * `query` checks out through `connect` (the callback form), so this times every statement's
 * wait as well as every explicit checkout.
 */
export function timeCheckouts(pool: pg.Pool, seen: (seconds: number) => void): void {
  const connect = pool.connect.bind(pool) as (cb?: CheckoutCallback) => Promise<pg.PoolClient> | void;
  const timed = (cb?: CheckoutCallback) => {
    const started = performance.now();
    const tell = () => seen((performance.now() - started) / 1000);
    if (cb) {
      return connect((err, client, done) => {
        tell();
        cb(err, client, done);
      });
    }
    return (connect() as Promise<pg.PoolClient>).then((client) => {
      tell();
      return client;
    });
  };
  pool.connect = timed as typeof pool.connect;
}
