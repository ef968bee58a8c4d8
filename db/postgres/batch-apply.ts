import type pg from 'pg';
import { changesOfEvents, type StoreChange } from '../changes.js';
import { CcaError, isCcaError } from '../../core/diagnostics/index.js';
import { intervalOf, type KeyInterval } from '../keyspace.js';
import type { TxnRequest, TxnResponse, WatchBatch, WatchEvent } from '../store.js';
import { deleteInterval, evaluateTxn } from '../txn-eval.js';
import { BatchView, NeedMore, NeedMoreLeases } from './batch-view.js';
import { loadKeys } from './sql/loadKeys.js';
import { loadLeases } from './sql/loadLeases.js';
import { readRange } from './sql/readRange.js';
import type { KnownRows } from './known-rows.js';
import { loadSnapshot, type Snapshot } from './sql/loadSnapshot.js';
import { writeChanges, writeChangesAtHead, type HeadGuard, type HookStatement, type LogRow } from './sql/writeChanges.js';

export type { HookStatement } from './sql/writeChanges.js';

export type WriteRequest = { kind: 'txn'; req: TxnRequest } | { kind: 'revoke'; lease: number } | { kind: 'expire'; lease: number };

export type WriteOutcome = { ok: true; value: TxnResponse | { revision: number } | boolean } | { ok: false; error: CcaError };

/**
 * Runs inside a write transaction, with every change committed there, the same SQL for a
 * batch of client writes or a controller step's own transaction.
 */
export interface CommitHook {
  /** Called before COMMIT with what the transaction changed (each key once), on its connection. */
  (client: pg.ClientBase, changes: StoreChange[]): Promise<void>;
  /**
   * The same work as SQL that rides in a snapshot batch's one write statement (commitPlan),
   * so the counter lock is held for one round trip, not four (BEGIN, write, hook, COMMIT)
   * and the event-loop turns between them. Undefined: these changes need nothing.
   */
  inStatement?(changes: StoreChange[]): HookStatement | undefined;
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
): Promise<{ outcomes: WriteOutcome[]; before: number; after: number; batches: WatchBatch[] }> {
  const hook = opts.hook;
  const head = await lockHead(client, opts.begin ?? false);
  const view = new BatchView(head.revision, head.compactRevision);
  await preload(client, view, requests);
  const { outcomes, rows, batches, dropped } = await evaluate(client, view, requests);
  if (rows.length > 0 || dropped.length > 0) {
    await writeChanges(client, rows, dropped, view.revision);
    if (hook && rows.length > 0) await hook(client, changesOf(batches));
  }
  return { outcomes, before: head.revision, after: view.revision, batches };
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
  const r = readRegions(items);
  await load(client, view, r.keys, r.intervals, r.leases, r.leaseKeys);
}

/** What a batch will obviously read: keys, key intervals, leases, and leases whose keys it needs. */
function readRegions(items: WriteRequest[]): { keys: string[]; intervals: KeyInterval[]; leases: number[]; leaseKeys: number[] } {
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
  return { keys, intervals, leases: [...leases], leaseKeys };
}

/** A batch evaluated against a snapshot taken without the counter lock. */
export interface SnapshotPlan {
  outcomes: WriteOutcome[];
  rows: LogRow[];
  /** The rows as the watch events of each revision they make. */
  batches: WatchBatch[];
  /** The head the snapshot saw; the plan commits only if the store is still there. */
  guard: HeadGuard;
  /** The head after the plan's commits (= guard.revision when it writes nothing). */
  after: number;
}

/**
 * The short write path, one round trip before the commit: read the head and every key the
 * batch reads in one statement (one snapshot, no lock), evaluate there. A plan that writes
 * nothing is already an answer (its reads were the store at that head); one that writes
 * commits with `commitPlan`, which applies it only if nobody wrote since. Undefined when
 * the snapshot cannot answer the batch: a lease is revoked or expired, or a put attaches a
 * lease (lease rows change without moving the head), or the evaluator asked for more than
 * the preload (a second read would be another snapshot). Those go the locked way.
 * With `known` (known-rows.ts), a batch of single keys it knows is planned without the read.
 */
export async function planAtSnapshot(client: pg.ClientBase, requests: WriteRequest[], known?: KnownRows): Promise<SnapshotPlan | undefined> {
  if (!requests.every((r) => r.kind === 'txn' && !attachesLease(r.req))) return undefined;
  const r = readRegions(requests);
  // Single keys all known from this batcher's own reads and commits: plan without a read.
  const remembered = r.intervals.length === 0 ? known?.snapshotOf(r.keys) : undefined;
  if (remembered) {
    const plan = planOn(remembered, requests, r.keys, []);
    // Only a plan that writes is checked by the guard; an answer that writes nothing must come from the store.
    if (plan && plan.rows.length > 0) return plan;
  }
  const snap = await loadSnapshot(client, {
    keys: r.keys,
    bounded: r.intervals.filter((iv) => iv.end !== undefined).map((iv) => ({ start: iv.start, end: iv.end! })),
    unbounded: r.intervals.filter((iv) => iv.end === undefined).map((iv) => iv.start),
    leases: [],
  });
  known?.learn(snap, r.keys);
  return planOn(snap, requests, r.keys, r.intervals);
}

function planOn(snap: Snapshot, requests: WriteRequest[], keys: string[], intervals: KeyInterval[]): SnapshotPlan | undefined {
  const view = new BatchView(snap.revision, snap.compactRevision);
  view.addRows(snap.rows, keys, intervals, []);
  try {
    const { outcomes, rows, batches } = evaluatePass(view, requests);
    return { outcomes, rows, batches, guard: { revision: snap.revision, compactRevision: snap.compactRevision }, after: view.revision };
  } catch (e) {
    if (e instanceof NeedMore || e instanceof NeedMoreLeases) return undefined;
    throw e;
  }
}

function attachesLease(req: TxnRequest): boolean {
  return [...req.success, ...(req.failure ?? [])].some((op) => 'put' in op && (op.put.lease ?? 0) !== 0);
}

/**
 * Commit a snapshot plan that writes: one statement that takes the counter lock, checks
 * the head is still the plan's, and writes (writeChangesAtHead). Without a hook it is its
 * own transaction (one round trip, one fsync); with one, the hook's statements ride in the
 * same transaction. `committing` is called just before the statement whose loss leaves
 * the outcome unknown. False: another writer moved the head first, nothing was written.
 */
export async function commitPlan(
  client: pg.ClientBase,
  plan: SnapshotPlan,
  opts: { hook?: CommitHook | undefined; committing(): void },
): Promise<boolean> {
  const changes = opts.hook ? changesOf(plan.batches) : [];
  if (!opts.hook || opts.hook.inStatement) {
    opts.committing();
    return writeChangesAtHead(client, plan.rows, plan.after, plan.guard, opts.hook?.inStatement?.(changes));
  }
  await client.query('BEGIN');
  if (!(await writeChangesAtHead(client, plan.rows, plan.after, plan.guard))) {
    await client.query('ROLLBACK');
    return false;
  }
  await opts.hook(client, changes);
  opts.committing();
  await client.query('COMMIT');
  return true;
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
): Promise<Evaluated> {
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

function evaluatePass(view: BatchView, items: WriteRequest[]): Evaluated {
  view.reset();
  const rows: LogRow[] = [];
  const batches: WatchBatch[] = [];
  const dropped: number[] = [];
  const commit = (events: WatchEvent[]) => {
    const revision = view.revision + 1;
    events.forEach((e, seq) => rows.push(toLogRow(revision, seq, e)));
    batches.push({ revision, events });
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
  return { outcomes, rows, batches, dropped };
}

/**
 * A batch evaluated: each item's outcome, the log rows to write, the same changes as the
 * watch events they will be read back as (one batch per revision), the leases to drop.
 */
interface Evaluated {
  outcomes: WriteOutcome[];
  rows: LogRow[];
  batches: WatchBatch[];
  dropped: number[];
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

/** What the batch changed, each key once, with its values before and after where known (db/changes.ts). */
function changesOf(batches: readonly WatchBatch[]): StoreChange[] {
  return changesOfEvents(batches.flatMap((b) => b.events));
}
