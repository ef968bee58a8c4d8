import type pg from 'pg';
import { CcaError, isCcaError } from '../../core/diagnostics/index.js';
import { intervalOf, type KeyInterval } from '../keyspace.js';
import type { TxnRequest, TxnResponse, WatchEvent } from '../store.js';
import { deleteInterval, evaluateTxn } from '../txn-eval.js';
import { BatchView, NeedMore, NeedMoreLeases } from './batch-view.js';
import { pgFailure } from './errors.js';
import { loadKeys } from './sql/loadKeys.js';
import { loadLeases } from './sql/loadLeases.js';
import { readRange } from './sql/readRange.js';
import type { LogRow } from './sql/writeChanges.js';
import { writeChanges } from './sql/writeChanges.js';

type Settle<T> = { resolve(v: T): void; reject(e: unknown): void };

export type WriteItem =
  | ({ kind: 'txn'; req: TxnRequest } & Settle<TxnResponse>)
  | ({ kind: 'revoke'; lease: number } & Settle<{ revision: number }>)
  | ({ kind: 'expire'; lease: number } & Settle<boolean>);

type Outcome = { ok: true; value: unknown } | { ok: false; error: CcaError };

export interface BatcherOptions {
  maxBatch: number;
  target: string;
  /** Called with the head after each commit that moved it. */
  onCommit(revision: number): void;
}

/**
 * The write path. Client writes that arrive while a batch is committing wait and go
 * together into the next one: one Postgres transaction, one counter lock, one fsync,
 * one NOTIFY. Inside it each client txn is evaluated in arrival order, gets its own
 * revision (or none if it changed nothing), and fails alone on a conflict or error.
 */
export class WriteBatcher {
  private queue: WriteItem[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: BatcherOptions,
  ) {}

  submit(item: WriteItem): void {
    this.queue.push(item);
    this.running ??= this.drain();
  }

  /** Resolves once everything submitted so far is settled. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.opts.maxBatch);
        await this.runBatch(batch);
      }
    } finally {
      this.running = undefined;
    }
  }

  private async runBatch(items: WriteItem[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      const err = pgFailure(e, this.opts.target);
      for (const it of items) it.reject(err);
      return;
    }
    let committing = false;
    let broken: unknown;
    // A connection that dies between our queries emits 'error' on the client; without a
    // listener that would crash the process. The next query then fails and we classify it.
    const onError = (e: unknown) => {
      broken ??= e;
    };
    client.on('error', onError);
    try {
      const begin = (await client.query(
        'BEGIN; SELECT revision, compact_revision AS "compactRevision" FROM cca_meta WHERE id = 1 FOR UPDATE',
      )) as unknown as pg.QueryResult<{ revision: number; compactRevision: number }>[];
      const head = begin[1]!.rows[0]!;
      const view = new BatchView(head.revision, head.compactRevision);
      await this.preload(client, view, items);
      const { outcomes, rows, dropped } = await this.evaluate(client, view, items);
      if (rows.length > 0 || dropped.length > 0) await writeChanges(client, rows, dropped, view.revision);
      committing = true;
      await client.query('COMMIT');
      if (view.revision > head.revision) this.opts.onCommit(view.revision);
      items.forEach((it, i) => {
        const o = outcomes[i]!;
        if (o.ok) (it.resolve as (v: unknown) => void)(o.value);
        else it.reject(o.error);
      });
    } catch (e) {
      broken = e;
      const err = pgFailure(e, this.opts.target, committing);
      await client.query('ROLLBACK').catch(() => undefined);
      for (const it of items) it.reject(err);
    } finally {
      client.off('error', onError);
      client.release(broken instanceof Error && !isCcaError(broken) ? broken : undefined);
    }
  }

  /** Load in one round trip what the batch will obviously read, so re-evaluation is rare. */
  private async preload(client: pg.PoolClient, view: BatchView, items: WriteItem[]): Promise<void> {
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
    await this.load(client, view, keys, intervals, [...leases], leaseKeys);
  }

  private async load(
    client: pg.PoolClient,
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

  private async evaluate(
    client: pg.PoolClient,
    view: BatchView,
    items: WriteItem[],
  ): Promise<{ outcomes: Outcome[]; rows: LogRow[]; dropped: number[] }> {
    for (;;) {
      try {
        return this.evaluatePass(view, items);
      } catch (e) {
        if (e instanceof NeedMore) {
          await this.load(client, view, e.keys, e.intervals, [], []);
          for (const h of e.historical) {
            const r = await readRange(client, h.iv, { revision: h.revision, limit: 0, reverse: false, keysOnly: false, countOnly: false });
            view.addHistorical(h.iv, h.revision, r.kvs);
          }
        } else if (e instanceof NeedMoreLeases) {
          await this.load(client, view, [], [], e.ids, e.keysOf);
        } else {
          throw e;
        }
      }
    }
  }

  private evaluatePass(view: BatchView, items: WriteItem[]): { outcomes: Outcome[]; rows: LogRow[]; dropped: number[] } {
    view.reset();
    const rows: LogRow[] = [];
    const dropped: number[] = [];
    const commit = (events: WatchEvent[]) => {
      const revision = view.revision + 1;
      events.forEach((e, seq) => rows.push(toLogRow(revision, seq, e)));
      view.commit(revision, events);
    };
    const outcomes = items.map((it): Outcome => {
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
