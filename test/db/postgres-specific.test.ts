import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PostgresStore } from '../../db/postgres/store.js';
import type { WatchBatch } from '../../db/store.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';
import { codeOf } from './conformance.js';
import { waitFor } from '../support/wait.js';
import { intervalOf } from '../../db/keyspace.js';
import type { Db } from '../../db/postgres/sql/db.js';
import { loadKeys } from '../../db/postgres/sql/loadKeys.js';
import { readLog } from '../../db/postgres/sql/readLog.js';
import { readRange } from '../../db/postgres/sql/readRange.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

async function freshStore(label: string, opts: Parameters<typeof PostgresStore.open>[1] = {}) {
  const db = await createTestDatabase(label);
  dbs.push(db);
  return { url: db.url, store: await PostgresStore.open(db.url, opts) };
}

async function sql<T extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}

describe('PostgresStore specifics', () => {
  test('a watch survives its LISTEN connection being killed: nothing lost, nothing doubled', async () => {
    const { url, store } = await freshStore('drop', { watchPollMs: 200 });
    const got: WatchBatch[] = [];
    const ac = new AbortController();
    const done = (async () => {
      for await (const b of store.watch({ prefix: 'w/', fromRevision: 2, signal: ac.signal })) got.push(b);
    })();
    for (let i = 0; i < 20; i++) await store.put(`w/${i}`, 'x');
    const killed = await sql<{ n: number }>(
      url,
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'ccattler-listen'`,
    );
    expect(killed[0]!.n).toBe(1);
    for (let i = 20; i < 40; i++) await store.put(`w/${i}`, 'x');
    await waitFor('40 events', async () => got.length, (n) => n >= 40);
    // The LISTEN connection comes back on its own.
    await waitFor('one LISTEN connection again',
      () => sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'ccattler-listen' AND datname = current_database()`),
      (r) => r[0]!.n === 1,
    );
    for (let i = 40; i < 45; i++) await store.put(`w/${i}`, 'x');
    await waitFor('45 events', async () => got.length, (n) => n >= 45);
    ac.abort();
    await done;
    expect(got.map((b) => b.revision)).toEqual(Array.from({ length: 45 }, (_, i) => i + 2));
    expect(got.map((b) => b.events[0]!.kv.key)).toEqual(Array.from({ length: 45 }, (_, i) => `w/${i}`));
    await store.close();
  });

  test('the watch ring is bounded in bytes: watchers at the edge and behind it still get every revision once, in order', async () => {
    const { store } = await freshStore('ringbytes', { watchRingBytes: 200_000 });
    try {
      const from = (await store.revision()) + 1;
      const edge: number[] = [];
      const ac = new AbortController();
      const following = (async () => {
        for await (const b of store.watch({ prefix: 'r/', fromRevision: from, signal: ac.signal })) edge.push(b.revision);
      })();
      const value = 'v'.repeat(10_000);
      let last = 0;
      for (let i = 0; i < 100; i++) last = (await store.put(`r/${i % 7}`, `${i}:${value}`)).revision;
      await waitFor('the live watcher to see every revision', async () => edge.length, (n) => n >= 100);
      const ring = store.watchRingSize();
      console.log(`ring after 100 revisions of 10 kB: ${ring.revisions} revisions, ${ring.bytes} bytes (bound 200000)`);
      expect(ring.bytes).toBeLessThanOrEqual(200_000);
      expect(ring.revisions).toBeLessThan(100);
      // A late watcher starts behind the ring: it reads the log on its own.
      const late: number[] = [];
      for await (const b of store.watch({ prefix: 'r/', fromRevision: from, signal: AbortSignal.timeout(10_000) })) {
        late.push(b.revision);
        if (b.revision >= last) break;
      }
      const all = Array.from({ length: last - from + 1 }, (_, i) => from + i);
      expect(edge).toEqual(all);
      expect(late).toEqual(all);
      ac.abort();
      await following;
    } finally {
      await store.close();
    }
  });

  test('a connection killed under the write batch fails that batch with a coded error; the next write works', async () => {
    const { url, store } = await freshStore('kill');
    await store.put('a', '1');
    await sql(url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'ccattler'`);
    const first = await codeOf(store.put('a', '2'));
    expect(['no error', 'CCA-E0111', 'CCA-E0112']).toContain(first);
    const r = await store.put('a', '3');
    expect((await store.get('a'))?.value).toBe('3');
    expect(r.revision).toBe(await store.revision());
    await store.close();
  });

  test('with several processes on one database, a lease expires once: one revision, no double delete', async () => {
    const { url, store: a } = await freshStore('lease2', { leaseReaperMs: 50 });
    const b = await PostgresStore.open(url, { leaseReaperMs: 50 });
    const c = await PostgresStore.open(url, { leaseReaperMs: 50 });
    // 3 s, not 1: on a loaded machine the six puts below took longer than a 1 s lease lives.
    const leases = await Promise.all([1, 2, 3].map(() => a.grantLease(3)));
    for (const [i, l] of leases.entries()) {
      await b.put(`l/${i}/x`, 'v', { lease: l.id });
      await c.put(`l/${i}/y`, 'v', { lease: l.id });
    }
    const before = await a.revision();
    const r = await waitFor('every key under l/ expired with its lease', () => a.range({ prefix: 'l/' }), (x) => x.count === 0, 12_000);
    expect(r.count).toBe(0);
    // Three leases with keys: exactly three revisions, each deleting one lease's two keys.
    expect(await a.revision()).toBe(before + 3);
    const rows = await sql<{ revision: number; n: number }>(
      url,
      `SELECT revision::int, count(*)::int AS n FROM cca_log WHERE revision > $1 GROUP BY revision ORDER BY revision`,
      [before],
    );
    expect(rows.map((x) => x.n)).toEqual([2, 2, 2]);
    expect(await a.leases()).toEqual([]);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  test('after a silence (store or every pod down), leases are renewed once before any expires, as etcd does', async () => {
    const diagnostics: string[] = [];
    const { url, store } = await freshStore('silence', { leaseReaperMs: 0, onDiagnostic: (d) => diagnostics.push(d.code) });
    const { id } = await store.grantLease(2);
    await store.put('held', 'x', { lease: id });
    await store.expireLeases(); // a normal reap: nothing due
    // Pretend the store was down for 30 s: nobody reaped, and the lease's time ran out meanwhile.
    await sql(url, `UPDATE cca_reaper SET last_reap_at = clock_timestamp() - interval '30 seconds'; UPDATE cca_lease SET expires_at = clock_timestamp() - interval '1 second'`);
    expect(await store.expireLeases()).toBe(0);
    expect(diagnostics).toEqual(['CCA-E0123']);
    expect(await store.get('held')).not.toBeNull();
    expect((await store.leaseTimeToLive(id)).ttl).toBeGreaterThanOrEqual(1);
    // The agent gets its chance to keep alive; without one, the lease expires as usual.
    const gone = await waitFor('the held key expired', async () => (await store.expireLeases(), await store.get('held')), (kv) => kv === null, 8_000);
    expect(gone).toBeNull();
    await store.close();
  });

  test("after a silence, a keepalive that comes before the reaper's first pass renews its lease (a returning pod's agents keep their tenure)", async () => {
    const { url, store } = await freshStore('silence-keepalive', { leaseReaperMs: 0 });
    const { id } = await store.grantLease(2);
    const other = (await store.grantLease(2)).id;
    await store.put('held', 'x', { lease: id });
    await store.expireLeases();
    await sql(url, `UPDATE cca_reaper SET last_reap_at = clock_timestamp() - interval '30 seconds'; UPDATE cca_lease SET expires_at = clock_timestamp() - interval '1 second'`);
    expect((await store.keepAlive(id)).ttl).toBe(2);
    expect((await store.leaseTimeToLive(id)).ttl).toBeGreaterThanOrEqual(1);
    // Every lease at once (the reaper's pass made early), not only the one kept alive.
    expect((await store.leaseTimeToLive(other)).ttl).toBeGreaterThanOrEqual(1);
    // Without a silence an expired lease stays dead: that pass was noted.
    await store.expireLeases();
    await sql(url, `UPDATE cca_lease SET expires_at = clock_timestamp() - interval '1 second' WHERE id = ${other}`);
    await expect(store.keepAlive(other)).rejects.toMatchObject({ code: 'CCA-E0107' });
    expect(await store.get('held')).not.toBeNull();
    await store.close();
  });

  test('batched writers: a conflict fails only its own client, every other client gets its own revision', async () => {
    const { store } = await freshStore('batch');
    await store.put('shared', '0');
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        i % 8 === 0
          ? store.txn({
              compare: [{ key: 'shared', target: 'version', op: '=', value: 1 }],
              success: [{ put: { key: 'shared', value: `won-${i}` } }],
            })
          : store.put(`k/${i}`, 'v').then((r) => ({ succeeded: true, revision: r.revision })),
      ),
    );
    const cas = results.filter((_, i) => i % 8 === 0);
    expect(cas.filter((r) => r.succeeded)).toHaveLength(1);
    const revisions = results.filter((r) => r.succeeded).map((r) => r.revision);
    expect(new Set(revisions).size).toBe(57);
    expect(Math.max(...revisions)).toBe(await store.revision());
    expect(Math.max(...revisions) - Math.min(...revisions)).toBe(56);
    await store.close();
  });

  test('an unreachable database is a coded environment error, not a stack trace', async () => {
    const port = await freePort();
    const err = await PostgresStore.open(`postgres://u:secret@127.0.0.1:${port}/db`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CCA-E0111', blame: 'environment' });
    expect(String((err as Error).message)).not.toContain('secret');
  });

  describe('hot queries use indexes on 100k log rows', () => {
    let url: string;
    let store: PostgresStore;
    beforeAll(async () => {
      ({ url, store } = await freshStore('explain'));
      // 100k history rows over 10k keys, as 1k revisions of 100 keys each.
      await sql(
        url,
        `INSERT INTO cca_log (revision, seq, key, value, deleted, create_revision, version, lease, prev_revision)
         SELECT r + 1, s, 'k/' || lpad(((r * 100 + s) % 10000)::text, 5, '0'), 'v', false, 2, 1, 0, 0
           FROM generate_series(1, 1000) r, generate_series(0, 99) s;
         INSERT INTO cca_kv (key, value, create_revision, mod_revision, version, lease)
         SELECT DISTINCT ON (key) key, value, create_revision, revision, version, lease FROM cca_log ORDER BY key, revision DESC;
         UPDATE cca_meta SET revision = 1001;
         ANALYZE cca_log; ANALYZE cca_kv;`,
      );
    }, 60_000);
    afterAll(() => store.close());

    /** EXPLAIN the statement a real SQL module sends, by handing it a Db that plans instead of running. */
    const planOf = async (run: (db: Db) => Promise<unknown>): Promise<string> => {
      let planned = '';
      const explaining = {
        query: async (text: string, params: unknown[]) => {
          planned = (await sql<{ 'QUERY PLAN': string }>(url, `EXPLAIN ${text}`, params)).map((r) => r['QUERY PLAN']).join('\n');
          throw new Error('planned');
        },
      } as unknown as Db;
      await run(explaining).catch(() => undefined);
      expect(planned).not.toBe('');
      return planned;
    };
    const shape = { limit: 100, reverse: false, keysOnly: false, countOnly: false };

    test('get by key', async () => {
      const p = await planOf((db) => readRange(db, intervalOf({ key: 'k/00042' }), { ...shape, revision: 0 }));
      expect(p, p).toMatch(/Index (Only )?Scan using cca_kv_pkey/);
      expect(p, p).not.toMatch(/Seq Scan/);
    });

    test('prefix range now', async () => {
      const p = await planOf((db) => readRange(db, intervalOf({ prefix: 'k/001' }), { ...shape, revision: 0 }));
      expect(p, p).toMatch(/Index (Only )?Scan using cca_kv_pkey/);
      expect(p, p).not.toMatch(/Seq Scan/);
    });

    test('prefix range at a past revision', async () => {
      const p = await planOf((db) => readRange(db, intervalOf({ prefix: 'k/001' }), { ...shape, revision: 500 }));
      expect(p, p).toMatch(/Index (Only )?Scan.*cca_log_key_revision/);
      expect(p, p).not.toMatch(/Seq Scan on cca_log/);
    });

    test('watch catch-up from a revision, filtered by prefix', async () => {
      const p = await planOf((db) => readLog(db, 990, 1001, intervalOf({ prefix: 'k/00' })));
      // Either index answers it: by revision then filter, or by key range and revision.
      expect(p, p).toMatch(/Index Scan (using|on) cca_log_(revision_seq_pk|key_revision)/);
      expect(p, p).not.toMatch(/Seq Scan on cca_log/);
    });

    test('watch catch-up from a revision, every key', async () => {
      const p = await planOf((db) => readLog(db, 990, 1001, intervalOf({ prefix: '' })));
      expect(p, p).toMatch(/Index Scan (using|on) cca_log_revision_seq_pk/);
      expect(p, p).not.toMatch(/Seq Scan on cca_log/);
    });

    test('a write batch loads its keys by index', async () => {
      const p = await planOf((db) =>
        loadKeys(db, { keys: ['k/00001', 'k/00002'], bounded: [{ start: 'k/002', end: 'k/003' }], unbounded: [], leases: [] }),
      );
      expect(p, p).toMatch(/cca_kv_pkey/);
      expect(p, p).not.toMatch(/Seq Scan on cca_kv/);
    });

    test('the store reads the seeded history correctly', async () => {
      const r = await store.range({ prefix: 'k/0004', revision: 500, limit: 3 });
      expect(r.count).toBe(10);
      expect(r.kvs.map((k) => k.key)).toEqual(['k/00040', 'k/00041', 'k/00042']);
    });
  });

  test('the schema matches its reviewed snapshot (a DBA sees every change in review)', async () => {
    const { url, store } = await freshStore('schema');
    await store.close();
    const cols = await sql<{ line: string }>(
      url,
      `SELECT table_name || '.' || column_name || ' ' || data_type || coalesce(' collate ' || collation_name, '') ||
              CASE WHEN is_nullable = 'NO' THEN ' not null' ELSE '' END AS line
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    );
    const idx = await sql<{ line: string }>(url, `SELECT indexdef AS line FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`);
    const actual = [...cols, ...idx].map((r) => r.line).join('\n') + '\n';
    const file = path.join(here, 'postgres-schema.snapshot');
    if (process.env.CCA_UPDATE_SNAPSHOTS) await writeFile(file, actual);
    expect(actual).toBe(await readFile(file, 'utf8'));
  });

  test("a person's read barrier does not wait for the pool: the head is read on the watch connection while every read connection is stuck", async () => {
    const { url, store } = await freshStore('head-barrier', { poolSize: 3 });
    const { revision } = await store.put('b/1', 'x');
    const people = store.interactive();
    // Every read of cca_kv waits on this lock: the pool's read connections all get stuck.
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE cca_kv IN ACCESS EXCLUSIVE MODE');
    const stuck = Array.from({ length: 4 }, () => store.get('b/1'));
    await expect.poll(async () => (await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'cca_kv'::regclass AND NOT granted`))[0]!.n).toBeGreaterThanOrEqual(2);
    const answer = await Promise.race([people.revision(), new Promise<string>((r) => setTimeout(() => r('still waiting'), 3_000))]);
    await locker.query('ROLLBACK');
    await locker.end();
    expect(answer).toBe(revision);
    expect((await Promise.all(stuck)).map((kv) => kv?.value)).toEqual(['x', 'x', 'x', 'x']);
    // Concurrent barriers share reads and each answers at or after the head as of its call.
    const next = await store.put('b/2', 'y');
    const many = await Promise.all(Array.from({ length: 20 }, () => people.revision()));
    expect(many.every((r) => r === next.revision)).toBe(true);
  });

  test("a commit hook's statement form commits with the batch's one write statement, and one that did not do all it must fails it whole", async () => {
    let want = 0;
    const hook = Object.assign(async () => undefined, {
      inStatement: (changes: { key: string }[]) => ({
        name: 'test_hook',
        ctes: `hook_rows AS (INSERT INTO hook_log SELECT k FROM unnest($1::text[]) AS k WHERE :applied RETURNING 1)`,
        done: `(SELECT count(*) FROM hook_rows) = $2::int`,
        values: [changes.map((c) => c.key), changes.length + want],
      }),
    });
    const { url, store } = await freshStore('hook-statement', { commitHook: hook });
    await sql(url, 'CREATE TABLE hook_log (k text)');
    const r = await store.put('h/1', 'x');
    expect(await sql<{ k: string }>(url, 'SELECT k FROM hook_log')).toEqual([{ k: 'h/1' }]);
    expect((await store.get('h/1'))?.modRevision).toBe(r.revision);
    want = 1; // the hook now falls one row short
    await expect(store.put('h/2', 'y')).rejects.toThrow();
    expect(await store.get('h/2')).toBeNull();
    expect(await store.revision()).toBe(r.revision);
    expect(await sql<{ k: string }>(url, 'SELECT k FROM hook_log')).toEqual([{ k: 'h/1' }]);
    want = 0;
    expect((await store.put('h/3', 'z')).revision).toBe(r.revision + 1); // no revision lost
  });

  test("a write batch Postgres picks as a deadlock's victim goes again: the client's write lands once, no revision lost", async () => {
    // The commit hook (the job enqueue in production) deadlocks with another session once.
    let hookCalls = 0;
    let waiting: () => void = () => undefined;
    const hookWaits = new Promise<void>((r) => (waiting = r));
    const { url, store } = await freshStore('deadlock', {
      commitHook: async (client) => {
        if (++hookCalls > 1) return;
        await client.query('SELECT pg_advisory_xact_lock(1)');
        setTimeout(waiting, 100);
        await client.query('SELECT pg_advisory_xact_lock(2)'); // held by the other session
      },
    });
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(2)');
      const before = await store.revision();
      const put = store.put('d/1', 'x');
      await hookWaits;
      // The hook waited first, so its session finds the cycle and is rolled back.
      await holder.query('SELECT pg_advisory_xact_lock(1)');
      await holder.query('COMMIT');
      const r = await put;
      expect(hookCalls).toBe(2);
      expect(r.revision).toBe(before + 1);
      expect((await store.get('d/1'))?.version).toBe(1);
    } finally {
      await holder.end();
    }
  }, 60_000);

  test("a watcher at the edge gets this pod's own commits without a read of the log, as the log would give them", async () => {
    const { url, store: owner } = await freshStore('own-commits-ring');
    await owner.put('o/gone', 'x');
    await owner.put('o/kept', 'v1');
    // A role that may write the log but not read it: a pod opened with it fails any log read.
    const role = `cca_noread_${process.pid}_${Date.now()}`;
    await sql(url, `CREATE ROLE ${role} LOGIN PASSWORD 'pw'`);
    await sql(url, `GRANT USAGE ON SCHEMA cca_migrations TO ${role}; GRANT SELECT ON ALL TABLES IN SCHEMA cca_migrations TO ${role};
                    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role};
                    REVOKE SELECT ON cca_log FROM ${role}`);
    const u = new URL(url);
    u.username = role;
    u.password = 'pw';
    const pod = await PostgresStore.open(u.toString(), { migrate: false });
    try {
      await expect(pod.range({ prefix: 'o/', revision: 1 })).rejects.toThrow(); // the log is unreadable here
      const from = (await pod.revision()) + 1;
      const mine: WatchBatch[] = [];
      const ac = new AbortController();
      const watching = (async () => {
        for await (const b of pod.watch({ prefix: 'o/', fromRevision: from, prevKv: true, signal: ac.signal })) mine.push(b);
      })().catch((e: unknown) => e);
      await pod.txn({ compare: [], success: [{ put: { key: 'o/kept', value: 'v2' } }, { delete: { key: 'o/gone' } }, { put: { key: 'o/new', value: 'n' } }] });
      await pod.put('o/kept', 'v3');
      await waitFor('the four events of own commits', async () => mine.reduce((n, b) => n + b.events.length, 0), (n) => n >= 4);
      ac.abort();
      expect(await watching).toBeUndefined(); // ended by the abort, not by a refused log read
      // The same revisions read from the log by another pod: the same events, prevKv included.
      const fromLog: WatchBatch[] = [];
      const ac2 = new AbortController();
      for await (const b of owner.watch({ prefix: 'o/', fromRevision: from, prevKv: true, signal: ac2.signal })) {
        fromLog.push(b);
        if (fromLog.reduce((n, x) => n + x.events.length, 0) >= 4) ac2.abort();
      }
      expect(mine).toEqual(fromLog);
      expect(mine.flatMap((b) => b.events.map((e) => `${e.type} ${e.kv.key} ${e.prevKv?.value ?? '-'}`))).toEqual(['put o/kept v1', 'delete o/gone x', 'put o/new -', 'put o/kept v2']);
    } finally {
      await pod.close();
      await sql(url, `DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });
});
