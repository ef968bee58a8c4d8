import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isCcaError, type CcaError } from '../../core/diagnostics/index.js';
import { openStore } from '../../db/index.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../db/postgres/embedded.js';
import { startServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { freePort } from '../support/postgres-server.js';
import { makeTestCa, type TestCa } from '../support/tls-certs.js';

/**
 * Postgres URLs with sslmode and sslrootcert reach pg whole, for the store, its LISTEN
 * connection and graphile-worker (which shares the server's pool): checked against an
 * embedded Postgres of our own started with ssl=on and a certificate this test makes.
 */
describe('Postgres over TLS (sslmode=verify-full, sslrootcert)', () => {
  let dir: string;
  let ca: TestCa;
  let stranger: TestCa;
  let postgres: RunningPostgres;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cca-pg-tls-'));
    ca = makeTestCa(dir, 'ca');
    stranger = makeTestCa(dir, 'stranger');
    const cert = ca.issue('pg-server');
    postgres = await startEmbeddedPostgres({ dataDir: join(dir, 'data'), port: await freePort(), persistent: false, noSync: true, ssl: cert });
  }, 120_000);

  afterAll(async () => {
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const withParams = (params: string) => `${postgres.url}?${params}`;

  /**
   * The probes connect in plain text under their own name: a probe that has just ended can
   * still be listed in pg_stat_activity for a moment (its backend exits after the client
   * closes), so the plain-connection count leaves them out by name, not only by pid.
   */
  const PROBE = 'cca-tls-probe';
  const probe = () => new pg.Client({ connectionString: postgres.url, application_name: PROBE });

  /** Whether every backend of `applicationPrefix` on the server uses TLS, and how many there are. */
  async function sslOf(applicationPrefix: string): Promise<{ count: number; allSsl: boolean }> {
    const c = probe();
    await c.connect();
    try {
      const r = await c.query<{ count: string; all_ssl: boolean | null }>(
        `SELECT count(*) AS count, bool_and(s.ssl) AS all_ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
          WHERE a.application_name LIKE $1 AND a.pid <> pg_backend_pid()`,
        [`${applicationPrefix}%`],
      );
      return { count: Number(r.rows[0]!.count), allSsl: r.rows[0]!.all_ssl === true };
    } finally {
      await c.end();
    }
  }

  /**
   * LISTENing backends over TLS, and the backends without TLS (name: query), the probes
   * excepted, and so are backends still starting: Postgres 18 lists a connection from its
   * first moment (state 'starting'), before it reports its TLS and its application_name —
   * a pool connecting at that instant would show as ": " without TLS.
   */
  async function connections(): Promise<{ listening: number; plain: string[] }> {
    const c = probe();
    await c.connect();
    try {
      const r = await c.query<{ listening: string; plain: string[] }>(
        `SELECT count(*) FILTER (WHERE a.query ILIKE 'LISTEN%' AND s.ssl) AS listening,
                coalesce(array_agg(a.application_name || ': ' || a.query) FILTER (WHERE NOT s.ssl AND a.application_name IS DISTINCT FROM $1 AND a.state IS DISTINCT FROM 'starting'), '{}') AS plain
           FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.backend_type = 'client backend'`,
        [PROBE],
      );
      return { listening: Number(r.rows[0]!.listening), plain: r.rows[0]!.plain };
    } finally {
      await c.end();
    }
  }

  test('the store (pool and LISTEN connection) connects with TLS, as pg_stat_ssl shows', async () => {
    const store = await openStore(withParams(`sslmode=verify-full&sslrootcert=${ca.cert}&application_name=cca-tls-store`));
    try {
      await store.put('/tls', 'yes');
      expect((await store.get('/tls'))?.value).toBe('yes');
      const seen = await sslOf('cca-tls-store');
      expect(seen.count).toBeGreaterThan(0);
      expect(seen.allSsl).toBe(true);
      const { listening, plain } = await connections();
      expect(listening).toBeGreaterThan(0);
      expect(plain).toEqual([]);
    } finally {
      await store.close();
    }
  });

  test('cca server on such a URL: its pool, LISTEN and graphile-worker all use TLS', async () => {
    const server = await startServer({
      store: withParams(`sslmode=verify-full&sslrootcert=${ca.cert}&application_name=cca-tls-server`),
      port: 0,
      host: '127.0.0.1',
      openReads: false,
      adminToken: ADMIN,
      joinToken: JOIN,
      workers: 1,
      version: 'test',
    });
    try {
      const r = await fetch(`${server.url}/v1/services`, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(r.status).toBe(200);
      // The store's LISTEN and graphile-worker's (it holds one of the pool's connections).
      const { listening, plain } = await connections();
      expect(listening).toBeGreaterThanOrEqual(2);
      expect(plain).toEqual([]);
      const seen = await sslOf('cca-tls-server');
      expect(seen.count).toBeGreaterThan(0);
      expect(seen.allSsl).toBe(true);
    } finally {
      await server.stop();
    }
  }, 60_000);

  const refusal = async (url: string, open: (u: string) => Promise<unknown> = (u) => openStore(u)): Promise<CcaError> => {
    const e: unknown = await open(url).then(
      () => new Error('it connected'),
      (err: unknown) => err,
    );
    expect(isCcaError(e), String(e)).toBe(true);
    return e as CcaError;
  };

  test('a CA that did not sign the server certificate is refused with CCA-E0140', async () => {
    const e = await refusal(withParams(`sslmode=verify-full&sslrootcert=${stranger.cert}`));
    expect(e.code).toBe('CCA-E0140');
    expect(e.message).toMatch(/the TLS connection to the postgres store at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/postgres\?.* failed: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/);
    expect(e.diagnostic.fix).toContain('sslrootcert=');
    // The same through startServer (its pool migrates first): coded, not CCA-E0001.
    const viaServer = await refusal(withParams(`sslmode=verify-full&sslrootcert=${stranger.cert}`), (u) =>
      startServer({ store: u, port: 0, host: '127.0.0.1', openReads: false, workers: 0, version: 'test' }),
    );
    expect(viaServer.code).toBe('CCA-E0140');
  });

  test('an unknown sslmode is CCA-E0116; a missing sslrootcert is CCA-E0004 naming it', async () => {
    const mode = await refusal(withParams('sslmode=verify-everything'));
    expect(mode.code).toBe('CCA-E0116');
    expect(mode.message).toContain('sslmode');
    const missing = await refusal(withParams(`sslmode=verify-full&sslrootcert=${join(dir, 'nope.pem')}`));
    expect(missing.code).toBe('CCA-E0004');
    expect(missing.message).toContain(join(dir, 'nope.pem'));
  });
});
