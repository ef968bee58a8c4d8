import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3, type IOptions } from 'etcd3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { EtcdStore } from '../../db/etcd/store.js';
import { MemoryStore } from '../../db/memory.js';
import { PostgresStore } from '../../db/postgres/store.js';
import { SqliteStore } from '../../db/sqlite/store.js';
import type { KeyValue, Store } from '../../db/store.js';
import { createTestDatabase } from '../support/databases.js';
import { startTestEtcd, type RunningEtcd } from '../support/etcd-server.js';
import { RawEtcdBackend, StoreBackend, type DiffBackend, type Result, type WatchOutcome } from './differential-backends.js';
import { same, upTo, watchAsEtcd } from './differential-compare.js';
import { fenceKey, HistoryGen, Rng, seedOf, type GenState, type HOp, type WatchSpec } from './differential-gen.js';

/*
 * Differential test: random histories against raw etcd (the oracle, through etcd3's own
 * clients) and against MemoryStore, PostgresStore, SqliteStore and EtcdStore. Every answer must match the
 * oracle's apart from the allowed differences in differential-compare.ts, and the Store
 * backends must match each other exactly.
 *
 *   CCA_SEED=<seed>            replay a run (printed at the start)
 *   CCA_DIFF_HISTORIES=<n>     how many histories (default 200)
 *   CCA_DIFF_OPS=<n>           operations per history (default 30)
 *   CCA_DIFF_ONLY=<i>          run only history i of the seed
 *   CCA_DIFF_LANES=<n>         backend sets run at once (default 2; see Lane)
 */
const RUN = process.env.CCA_SEED ?? randomBytes(4).toString('hex');
const HISTORIES = Number(process.env.CCA_DIFF_HISTORIES ?? 200);
const OPS = Number(process.env.CCA_DIFF_OPS ?? 30);
const ONLY = process.env.CCA_DIFF_ONLY !== undefined ? Number(process.env.CCA_DIFF_ONLY) : undefined;

interface Mismatch {
  history: number;
  step: number | string;
  op: unknown;
  backend: string;
  expected: unknown;
  actual: unknown;
}

/**
 * One set of backends: an oracle etcd, the stores and their servers. Histories run on LANES
 * sets at once (history h on lane h mod LANES): a step waits on round trips to etcd and
 * Postgres, not on this process's CPU, so one lane left most of the run idle. Each history's
 * operations still run one at a time, in order, on backends no other history touches at the
 * same time; its seed is seedOf(RUN, h) whichever lane runs it.
 */
interface Lane {
  oracleEtcd: RunningEtcd;
  storeEtcd: RunningEtcd;
  client: Etcd3;
  pgDb: { url: string; drop(): Promise<void> };
  /** The fresh MemoryStore of the history running now (the generator reads it). */
  memory(): Store;
  sqliteDir: string;
  oracle: RawEtcdBackend;
  stores: StoreBackend[];
}

const LANES = Math.max(1, Number(process.env.CCA_DIFF_LANES ?? 2));
const lanes: Lane[] = [];
/** What the oracle answered, by operation and outcome: shows what a run covered. */
const coverage = new Map<string, number>();
const tally = (k: string) => coverage.set(k, (coverage.get(k) ?? 0) + 1);

async function openLane(n: number): Promise<Lane> {
  // Two etcds: the oracle's revisions must move only with the oracle's own operations.
  const [oracleEtcd, storeEtcd, pgDb] = await Promise.all([startTestEtcd({ fresh: true }), startTestEtcd({ fresh: true }), createTestDatabase(`diff${n}`)]);
  // No retries and no circuit breaker: a cancelled watch stream counts as a failure for etcd3's
  // breaker, and a retried write could apply twice.
  const once = { execute: async (fn: (ctx: unknown) => unknown) => await fn({ signal: new AbortController().signal, attempt: 1 }) };
  const policy = once as unknown as NonNullable<NonNullable<IOptions['faultHandling']>['global']>;
  const client = new Etcd3({ hosts: oracleEtcd.endpoints, faultHandling: { global: policy, host: () => policy } });
  // SQLite commits with synchronous = FULL: on tmpfs (as the test etcds' data) its fsyncs cost nothing.
  const sqliteDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'cca-diff-sqlite-'));
  let sqliteFiles = 0;
  let memoryStore: Store | undefined;
  return {
    oracleEtcd,
    storeEtcd,
    client,
    pgDb,
    memory: () => memoryStore!,
    sqliteDir,
    oracle: new RawEtcdBackend(client),
    stores: [
      new StoreBackend(
        'memory',
        async () => {
          memoryStore = new MemoryStore();
          return memoryStore;
        },
        true,
      ),
      new StoreBackend('postgres', () => PostgresStore.open(pgDb.url, { leaseReaperMs: 60_000 }), false),
      new StoreBackend('sqlite', () => SqliteStore.open(`sqlite:${join(sqliteDir, `h${sqliteFiles++}.db`)}`), true),
      new StoreBackend('etcdStore', () => EtcdStore.open(`etcd://${storeEtcd.hostPort}/cca/diff`), false),
    ],
  };
}

beforeAll(async () => {
  const opened = await Promise.allSettled(Array.from({ length: ONLY !== undefined ? 1 : LANES }, (_, n) => openLane(n)));
  for (const o of opened) if (o.status === 'fulfilled') lanes.push(o.value);
  for (const o of opened) if (o.status === 'rejected') throw o.reason;
});

afterAll(async () => {
  await Promise.all(
    lanes.map(async (l) => {
      for (const b of l.stores) await b.close().catch(() => undefined);
      await l.oracle.close().catch(() => undefined);
      l.client.close();
      await Promise.all([l.oracleEtcd.stop(), l.storeEtcd.stop(), l.pgDb.drop()]);
      rmSync(l.sqliteDir, { recursive: true, force: true });
    }),
  );
});

async function genState(
  mem: Store,
  compactRevision: number,
  leases: { granted: number; alive: Set<number> },
  live: number[],
  watches: number,
): Promise<GenState> {
  const all = await mem.range({ prefix: '' });
  return {
    head: all.revision,
    compactRevision,
    current: new Map(all.kvs.map((kv: KeyValue) => [kv.key, kv])),
    granted: leases.granted,
    alive: leases.alive,
    liveWatchStarts: live,
    watches,
  };
}

async function runHistory(lane: Lane, h: number, out: Mismatch[]): Promise<number> {
  const { oracle, stores } = lane;
  const rng = new Rng(seedOf(RUN, h));
  // One history in five repeats values (idempotent puts): Store backends only, memory as reference.
  const repeatValues = rng.chance(0.2);
  const gen = new HistoryGen(rng, repeatValues);
  const id = `${RUN}-${h}`;
  const all: DiffBackend[] = repeatValues ? stores : [oracle, ...stores];
  const compared = repeatValues ? stores.slice(1) : stores;
  await Promise.all(all.map((b) => b.begin(id)));
  const mem = lane.memory();
  const leases = { granted: 0, alive: new Set<number>() };
  const live: number[] = [];
  const watchSpecs: WatchSpec[] = [];
  let compactRevision = 0;
  let watches = 0;
  const before = out.length;

  const step = async (i: number | string, op: HOp): Promise<Result | undefined> => {
    const [expected, ...actual] = await Promise.all(all.map((b) => b.exec(op)));
    const outcome = 'ok' in expected! ? (op.t === 'txn' ? `ok/${(expected.ok as { succeeded: boolean }).succeeded}` : 'ok') : expected!.err;
    tally(`${repeatValues ? 'idempotent/' : ''}${op.t}:${outcome}`);
    for (let k = 0; k < compared.length; k++) {
      if (!same(expected, actual[k])) {
        const name = repeatValues ? `${compared[k]!.name} vs memory` : compared[k]!.name;
        out.push({ history: h, step: i, op, backend: name, expected, actual: actual[k] });
      }
    }
    return out.length > before ? undefined : expected;
  };

  for (let i = 0; i < OPS; i++) {
    const s = await genState(mem, compactRevision, leases, live, watches);
    const op = gen.next(s);
    watches = s.watches;
    if (op.t === 'watch') {
      live.push(s.head + 1);
      watchSpecs.push(op.w);
    }
    const r = await step(i, op);
    if (!r) return out.length - before;
    if ('ok' in r) {
      if (op.t === 'compact') compactRevision = op.revision;
      if (op.t === 'grant') {
        leases.granted++;
        leases.alive.add(leases.granted);
      }
      if (op.t === 'revoke') leases.alive.delete(op.lease);
    }
  }

  // Watches from past revisions, then one txn that lands an event in every watched range.
  const s = await genState(mem, compactRevision, leases, live, watches);
  for (let j = 0; j < rng.int(1, 3); j++) {
    const w = gen.watchSpec(s, true);
    watchSpecs.push(w);
    if (!(await step(`watch ${w.id}`, { t: 'watch', w }))) return out.length - before;
  }
  const fenceKeys = [...new Set(watchSpecs.map(fenceKey))];
  const fence = await step('fence', {
    t: 'txn',
    req: { compare: [], success: fenceKeys.map((key, n) => ({ put: { key, value: `fence-${n}` } })) },
  });
  if (!fence || !('ok' in fence)) return out.length - before;
  const fenceRevision = (fence.ok as { revision: number }).revision;
  const [expected, ...actual] = await Promise.all(all.map((b) => b.watchOutcomes(fenceRevision)));
  for (const w of watchSpecs) {
    const refW = upTo(expected!.get(w.id)!, fenceRevision);
    const kind = w.fromRevision === undefined ? 'live' : w.fromRevision === compactRevision ? 'fromCompactRev' : 'past';
    tally(`${repeatValues ? 'idempotent/' : ''}watch-${kind}:${refW.err ? refW.err.code : `${refW.batches.length > 1 ? 'events' : 'fence only'}`}`);
    const memoryW = repeatValues ? refW : upTo(actual[0]!.get(w.id)!, fenceRevision);
    for (let k = 0; k < compared.length; k++) {
      const mine: WatchOutcome = upTo(actual[k]!.get(w.id)!, fenceRevision);
      const name = compared[k]!.name;
      if (!repeatValues && !same(watchAsEtcd(refW, compactRevision), watchAsEtcd(mine, compactRevision))) {
        out.push({ history: h, step: `watch ${w.id}`, op: w, backend: name, expected: refW, actual: mine });
      } else if (name !== 'memory' && !same(memoryW, mine)) {
        out.push({ history: h, step: `watch ${w.id}`, op: w, backend: `${name} vs memory`, expected: memoryW, actual: mine });
      }
    }
  }
  await Promise.all(all.map((b) => b.end()));
  return out.length - before;
}

test(`differential: ${HISTORIES} random histories, raw etcd vs memory, postgres, sqlite, EtcdStore`, async () => {
  // eslint-disable-next-line no-console
  console.log(`differential: seed ${RUN} — replay with CCA_SEED=${RUN}`);
  const mismatches: Mismatch[] = [];
  const started = Date.now();
  const histories = ONLY !== undefined ? [ONLY] : Array.from({ length: HISTORIES }, (_, h) => h);
  // Each history's mismatches apart (runHistory stops a history at its own first one), then in history order.
  const found = new Map<number, Mismatch[]>();
  await Promise.all(
    lanes.map(async (lane, n) => {
      for (const h of histories.filter((_, i) => i % lanes.length === n)) {
        const out: Mismatch[] = [];
        found.set(h, out);
        await runHistory(lane, h, out);
      }
    }),
  );
  for (const h of histories) mismatches.push(...(found.get(h) ?? []));
  // eslint-disable-next-line no-console
  console.log(`differential: ${histories.length} histories × ${OPS} ops in ${Date.now() - started} ms, ${mismatches.length} mismatches`);
  // eslint-disable-next-line no-console
  console.log('differential coverage (reference outcomes: etcd; memory for idempotent/…):', JSON.stringify(Object.fromEntries([...coverage].sort())));
  const byBackend = new Map<string, number>();
  for (const m of mismatches) byBackend.set(m.backend, (byBackend.get(m.backend) ?? 0) + 1);
  for (const m of mismatches.slice(0, 12)) {
    // eslint-disable-next-line no-console
    console.log(
      `MISMATCH ${m.backend} history ${m.history} step ${m.step} (CCA_SEED=${RUN} CCA_DIFF_ONLY=${m.history})\n  op:       ${JSON.stringify(m.op)}\n  etcd:     ${JSON.stringify(m.expected)}\n  ${m.backend}: ${JSON.stringify(m.actual)}`,
    );
  }
  if (mismatches.length > 0) console.log('mismatches by backend:', Object.fromEntries(byBackend));
  const shown = mismatches.slice(0, 3).map((m) => ({ ...m, replay: `CCA_SEED=${RUN} CCA_DIFF_ONLY=${m.history}` }));
  expect(shown, `seed ${RUN}: replay with CCA_SEED=${RUN}`).toEqual([]);
}, 600_000);
