import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { isCcaError } from '../../core/diagnostics/index.js';
import { startEmbeddedPostgres } from '../../db/postgres/embedded.js';
import { PostgresStore } from '../../db/postgres/store.js';
import type { Store, WatchBatch } from '../../db/store.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';
import { checkHistory, type CommittedLog, type Operation, type Recorded } from './linearizability.js';
import { rng, seedFromEnv } from './random-history.js';

const seed = seedFromEnv();
const KEYS = ['lin/a', 'lin/b', 'lin/c', 'lin/d'];

/** Run `clients` concurrent clients for `opsPerClient` ops each, recording every call. */
async function recordHistory(store: Store, clients: number, opsPerClient: number, onProgress?: (done: number) => Promise<void>) {
  const history: Recorded[] = [];
  let done = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const next = rng(seed * 31 + client);
      for (let i = 0; i < opsPerClient; i++) {
        const key = KEYS[Math.floor(next() * KEYS.length)]!;
        const r = next();
        const value = `c${client}-${i}`;
        if (r < 0.4) {
          const op: Operation = { type: 'get', key };
          await call(history, client, op, async () => {
            const res = await store.range({ key });
            const kv = res.kvs[0];
            op.result = { value: kv?.value ?? null, modRevision: kv?.modRevision ?? 0, revision: res.revision };
          });
        } else if (r < 0.7) {
          const op: Operation = { type: 'put', key, value };
          await call(history, client, op, async () => {
            op.result = { revision: (await store.put(key, value)).revision };
          });
        } else {
          // A realistic CAS: read, then compare on what was read.
          const seen = await store.get(key).catch(() => null);
          const op: Operation = { type: 'cas', key, value, expectModRevision: seen?.modRevision ?? 0 };
          await call(history, client, op, async () => {
            const res = await store.txn({
              compare: [{ key, target: 'modRevision', op: '=', value: op.expectModRevision }],
              success: [{ put: { key, value } }],
            });
            op.result = { succeeded: res.succeeded, revision: res.revision };
          });
        }
        done++;
        await onProgress?.(done);
      }
    }),
  );
  return history;
}

async function call(history: Recorded[], client: number, op: Operation, run: () => Promise<void>): Promise<void> {
  const invoked = performance.now();
  try {
    await run();
    history.push({ client, op, outcome: { kind: 'ok' }, invoked, returned: performance.now() });
  } catch (e) {
    if (!isCcaError(e)) throw e;
    // Only "lost during commit" is ambiguous; every other coded failure applied nothing.
    const unknown = e.code === 'CCA-E0112';
    history.push({ client, op, outcome: { kind: unknown ? 'unknown' : 'failed' }, invoked, returned: unknown ? Infinity : performance.now() });
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The committed log, read straight from the table rather than through the store under test. */
async function committedLog(url: string, after: number): Promise<{ log: CommittedLog; end: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const rows = await c.query<{ revision: string; key: string; value: string }>(
      `SELECT revision, key, value FROM cca_log WHERE revision > $1 ORDER BY revision, seq`,
      [after],
    );
    const end = await c.query<{ revision: string }>(`SELECT revision FROM cca_meta`);
    const log: CommittedLog = new Map();
    for (const r of rows.rows) log.set(Number(r.revision), { key: r.key, value: r.value });
    return { log, end: Number(end.rows[0]!.revision) };
  } finally {
    await c.end();
  }
}

function startWatchers(store: Store, from: number, n: number) {
  return Array.from({ length: n }, () => {
    const got: WatchBatch[] = [];
    const ac = new AbortController();
    const done = (async () => {
      for await (const b of store.watch({ prefix: 'lin/', fromRevision: from, signal: ac.signal })) got.push(b);
    })();
    return { got, ac, done };
  });
}

async function checkWatchers(watchers: ReturnType<typeof startWatchers>, log: CommittedLog, start: number, end: number) {
  for (const w of watchers) {
    const until = Date.now() + 20_000;
    while ((w.got.at(-1)?.revision ?? start) < end && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    w.ac.abort();
    await w.done;
    // Ordered, gap-free, nothing doubled, nothing missed, each event as committed.
    expect(w.got.map((b) => b.revision)).toEqual(Array.from({ length: end - start }, (_, i) => start + 1 + i));
    for (const b of w.got) {
      expect(b.events.map((e) => ({ key: e.kv.key, value: e.kv.value }))).toEqual([log.get(b.revision)]);
    }
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

describe(`linearizability of PostgresStore (seed ${seed}; replay with CCA_SEED=${seed})`, () => {
  test('8 clients of mixed gets, puts and CAS txns on 4 keys, with watchers', async () => {
    const db = await createTestDatabase('lin');
    cleanups.push(db.drop);
    const store = await PostgresStore.open(db.url);
    const start = await store.revision();
    const watchers = startWatchers(store, start + 1, 3);
    const history = await recordHistory(store, 8, 150);
    const { log, end } = await committedLog(db.url, start);
    const verdict = checkHistory(history, log, start, end);
    expect(verdict.problems).toEqual([]);
    await checkWatchers(watchers, log, start, end);
    await store.close();
  }, 120_000);

  test('the same with Postgres restarted mid-history: failures are honest, nothing lost or doubled', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cca-lin-'));
    const dataDir = path.join(dir, 'data');
    const port = await freePort();
    let server = await startEmbeddedPostgres({ dataDir, port, persistent: true, noSync: true });
    cleanups.push(async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const store = await PostgresStore.open(server.url, { watchPollMs: 200 });
    const start = await store.revision();
    const watchers = startWatchers(store, start + 1, 2);
    let restarted = false;
    const history = await recordHistory(store, 8, 120, async (done) => {
      if (restarted || done < 300) return;
      restarted = true;
      await server.stop();
      await new Promise((r) => setTimeout(r, 1_000));
      server = await startEmbeddedPostgres({ dataDir, port, persistent: true, noSync: true });
    });
    expect(restarted).toBe(true);
    const failures = history.filter((h) => h.outcome.kind !== 'ok').length;
    expect(failures).toBeGreaterThan(0);
    const { log, end } = await committedLog(server.url, start);
    const verdict = checkHistory(history, log, start, end);
    expect(verdict.problems).toEqual([]);
    console.log(
      `restart run: ${history.length} ops, ${failures} failed or unknown (${verdict.unknownApplied} unknown applied, ${verdict.unknownLost} unknown lost)`,
    );
    await checkWatchers(watchers, log, start, end);
    await store.close();
  }, 180_000);
});
