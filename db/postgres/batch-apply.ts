import type pg from 'pg';
import { CcaError, isCcaError } from '../../core/diagnostics/index.js';
import { intervalOf, type KeyInterval } from '../keyspace.js';
import type { TxnRequest, TxnResponse, WatchEvent } from '../store.js';
import { deleteInterval, evaluateTxn } from '../txn-eval.js';
import { BatchView, NeedMore, NeedMoreLeases } from './batch-view.js';
import { loadKeys } from './sql/loadKeys.js';
import { loadLeases } from './sql/loadLeases.js';
import { readRange } from './sql/readRange.js';
import { writeChanges, type LogRow } from './sql/writeChanges.js';

export type WriteRequest = { kind: 'txn'; req: TxnRequest } | { kind: 'revoke'; lease: number } | { kind: 'expire'; lease: number };

export type WriteOutcome = { ok: true; value: TxnResponse | { revision: number } | boolean } | { ok: false; error: CcaError };

/**
 * Runs inside a write transaction, with every change committed there, the same SQL for a
 * batch of client writes or a controller step's own transaction.
 */
export interface CommitHook {
  /** Called before COMMIT with the keys the transaction changed, on its connection. */
  (client: pg.ClientBase, changedKeys: string[]): Promise<void>;
}

/**
 * Apply write requests in order inside an open Postgres transaction: take the counter
 * lock (a no-op when this transaction holds it already), load what they read, evaluate
 * each with the shared evaluator, write everything in one statement, run the hook.
 * Returns each request's outcome and the head revision after them; nothing is
 * committed here.
 */
export async function applyWrites(
  client: pg.ClientBase,
  requests: WriteRequest[],
  opts: { hook?: CommitHook | undefined; begin?: boolean } = {},
): Promise<{ outcomes: WriteOutcome[]; before: number; after: number }> {
  const hook = opts.hook;
  const head = await lockHead(client, opts.begin ?? false);
  const view = new BatchView(head.revision, head.compactRevision);
  await preload(client, view, requests);
  const { outcomes, rows, dropped } = await evaluate(client, view, requests);
  if (rows.length > 0 || dropped.length > 0) {
    await writeChanges(client, rows, dropped, view.revision);
    if (hook && rows.length > 0) await hook(client, [...new Set(rows.map((r) => r.key))]);
  }
  return { outcomes, before: head.revision, after: view.revision };
}

const LOCK_HEAD = 'SELECT revision, compact_revision AS "compactRevision" FROM cca_meta WHERE id = 1 FOR UPDATE';

/**
 * The first statement of every writing transaction: take the counter row's lock. Writers
 * queue here, so revision order is commit order and a rollback burns no number. With
 * `begin`, BEGIN rides in the same round trip.
 */
async function lockHead(client: pg.ClientBase, begin: boolean): Promise<{ revision: number; compactRevision: number }> {
  type Head = { revision: number; compactRevision: number };
  if (!begin) return (await client.query<Head>(LOCK_HEAD)).rows[0]!;
  const results = (await client.query(`BEGIN; ${LOCK_HEAD}`)) as unknown as pg.QueryResult<Head>[];
  return results[1]!.rows[0]!;
}

/** Load in one round trip what the batch will obviously read, so re-evaluation is rare. */
async function preload(client: pg.ClientBase, view: BatchView, items: WriteRequest[]): Promise<void> {
  const keys: string[] = [];
  const intervals: KeyInterval[] = [];
  const leases = new Set<number>();
  const leaseKeys: number[] = [];
  for (const it of items) {
    if (it.kind !== 'txn') {
      leases.add(it.lease);
      leaseKeys.push(it.lease);
      continue;
    }
    for (const c of it.req.compare) keys.push(c.key);
    for (const op of [...it.req.success, ...(it.req.failure ?? [])]) {
      if ('put' in op) {
        keys.push(op.put.key);
        if (op.put.lease) leases.add(op.put.lease);
      } else if ('delete' in op) {
        const iv = deleteInterval(op.delete);
        if (iv.single) keys.push(iv.start);
        else intervals.push(iv);
      } else if (!op.range.revision) {
        const iv = intervalOf(op.range);
        if (iv.single) keys.push(iv.start);
        else intervals.push(iv);
      }
    }
  }
  await load(client, view, keys, intervals, [...leases], leaseKeys);
}

async function load(
  client: pg.ClientBase,
  view: BatchView,
  keys: string[],
  intervals: KeyInterval[],
  leases: number[],
  leaseKeys: number[],
): Promise<void> {
  if (keys.length > 0 || intervals.length > 0 || leaseKeys.length > 0) {
    const rows = await loadKeys(client, {
      keys,
      bounded: intervals.filter((iv) => iv.end !== undefined).map((iv) => ({ start: iv.start, end: iv.end! })),
      unbounded: intervals.filter((iv) => iv.end === undefined).map((iv) => iv.start),
      leases: leaseKeys,
    });
    view.addRows(rows, keys, intervals, leaseKeys);
  }
  if (leases.length > 0) view.addLeases(leases, await loadLeases(client, leases));
}

async function evaluate(
  client: pg.ClientBase,
  view: BatchView,
  items: WriteRequest[],
): Promise<{ outcomes: WriteOutcome[]; rows: LogRow[]; dropped: number[] }> {
  for (;;) {
    try {
      return evaluatePass(view, items);
    } catch (e) {
      if (e instanceof NeedMore) {
        await load(client, view, e.keys, e.intervals, [], []);
        for (const h of e.historical) {
          const r = await readRange(client, h.iv, { revision: h.revision, limit: 0, reverse: false, keysOnly: false, countOnly: false });
          view.addHistorical(h.iv, h.revision, r.kvs);
        }
      } else if (e instanceof NeedMoreLeases) {
        await load(client, view, [], [], e.ids, e.keysOf);
      } else {
        throw e;
      }
    }
  }
}

function evaluatePass(view: BatchView, items: WriteRequest[]): { outcomes: WriteOutcome[]; rows: LogRow[]; dropped: number[] } {
  view.reset();
  const rows: LogRow[] = [];
  const dropped: number[] = [];
  const commit = (events: WatchEvent[]) => {
    const revision = view.revision + 1;
    events.forEach((e, seq) => rows.push(toLogRow(revision, seq, e)));
    view.commit(revision, events);
  };
  const outcomes = items.map((it): WriteOutcome => {
    try {
      if (it.kind === 'txn') {
        const out = evaluateTxn(view.view(), it.req);
        if (out.events.length > 0) commit(out.events);
        return { ok: true, value: { succeeded: out.succeeded, revision: view.revision, responses: out.responses } };
      }
      if (!view.isLeaseKnown(it.lease) || !view.isLeaseKeysLoaded(it.lease)) {
        throw new NeedMoreLeases([it.lease], [it.lease]);
      }
      const due = it.kind === 'revoke' ? view.leaseAlive(it.lease) || view.leaseExpired(it.lease) : view.leaseExpired(it.lease);
      if (!due) {
        if (it.kind === 'revoke') return { ok: false, error: new CcaError('CCA-E0107', { lease: it.lease }) };
        return { ok: true, value: false };
      }
      const keys = view.leaseKeys(it.lease);
      view.dropLease(it.lease);
      dropped.push(it.lease);
      if (keys.length > 0) {
        const out = evaluateTxn(view.view(), { compare: [], success: keys.map((key) => ({ delete: { key } })) });
        commit(out.events);
      }
      return { ok: true, value: it.kind === 'revoke' ? { revision: view.revision } : true };
    } catch (e) {
      if (e instanceof NeedMore || e instanceof NeedMoreLeases) throw e;
      if (isCcaError(e)) return { ok: false, error: e };
      throw e;
    }
  });
  return { outcomes, rows, dropped };
}

function toLogRow(revision: number, seq: number, e: WatchEvent): LogRow {
  const deleted = e.type === 'delete';
  return {
    revision,
    seq,
    key: e.kv.key,
    value: deleted ? '' : e.kv.value,
    deleted,
    createRevision: deleted ? 0 : e.kv.createRevision,
    version: deleted ? 0 : e.kv.version,
    lease: deleted ? 0 : e.kv.lease,
    prevRevision: e.prevKv?.modRevision ?? 0,
  };
}
