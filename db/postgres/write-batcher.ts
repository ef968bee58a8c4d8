import type pg from 'pg';
import { isCcaError } from '../../core/diagnostics/index.js';
import type { TxnRequest, TxnResponse, WatchBatch } from '../store.js';
import { applyWrites, commitPlan, planAtSnapshot, type CommitHook, type WriteOutcome } from './batch-apply.js';
import { abortedByPostgres, pgFailure } from './errors.js';
import { KnownRows } from './known-rows.js';
import type { StoreObserver } from './observer.js';

type Applied = { outcomes: WriteOutcome[]; before: number; after: number; batches: WatchBatch[] };

/** How a batch committed (StoreObserver.committed). */
export type BatchWay = 'snapshot' | 'locked';

/** `interactive`: someone waits on it (the store's interactive lane): it goes in people's batches, beside the background's. */
type Settle<T> = { resolve(v: T): void; reject(e: unknown): void; interactive?: boolean };

export type WriteItem =
  | ({ kind: 'txn'; req: TxnRequest } & Settle<TxnResponse>)
  | ({ kind: 'revoke'; lease: number } & Settle<{ revision: number }>)
  | ({ kind: 'expire'; lease: number } & Settle<boolean>);

export interface BatcherOptions {
  maxBatch: number;
  target: string;
  /**
   * Called with the head after each commit that moved it, and what the commit was: every
   * revision from `before` + 1 to the head is its own (it held the counter lock, or its
   * guard found the head at `before`), each with these events.
   */
  onCommit(revision: number, own: { before: number; batches: WatchBatch[] }): void;
  /**
   * A commit planned at head `before` is about to be sent; the function returned is called
   * once its outcome is known and told (after onCommit). The watch hub holds its log reads
   * of the revisions after `before` till then: the commit's NOTIFY may arrive first.
   */
  ownCommit?(before: number): () => void;
  hook?: CommitHook;
  /** Told of every committed batch (its size and time). */
  observer?: StoreObserver;
  /**
   * Where a person's write batch (items marked `interactive`) gets its connection, so that it
   * runs beside the background's batch instead of after it.
   */
  people: () => Promise<pg.PoolClient>;
}

/**
 * The write path. Client writes that arrive while a batch is committing wait and go
 * together into the next one: one Postgres transaction, one counter lock, one fsync,
 * one NOTIFY. Inside it each client txn is evaluated in arrival order, gets its own
 * revision (or none if it changed nothing), and fails alone on a conflict or error.
 * People's writes (the interactive lane) batch the same way in a queue of their own,
 * beside the background's (drainPeople).
 */
export class WriteBatcher {
  /** The background's items, and their one batch in flight. */
  private queue: WriteItem[] = [];
  private running: Promise<void> | undefined;
  /** People's items, and their one batch in flight (beside the background's). */
  private peopleQueue: WriteItem[] = [];
  private peopleRunning: Promise<void> | undefined;
  /** The last snapshot plan lost to another writer: the next batch takes the lock first. */
  private overtaken = false;
  /** Rows this batcher knows at the head of its last read or commit (known-rows.ts). */
  private readonly known = new KnownRows();

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: BatcherOptions,
  ) {}

  submit(item: WriteItem): void {
    if (item.interactive) {
      this.peopleQueue.push(item);
      this.peopleRunning ??= this.drainPeople();
      return;
    }
    this.queue.push(item);
    this.running ??= this.drain();
  }

  /** Resolves once everything submitted so far is settled. */
  async idle(): Promise<void> {
    while (this.running || this.peopleRunning) await Promise.all([this.running, this.peopleRunning]);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.runBatch(this.queue.splice(0, this.opts.maxBatch), 'background');
    } finally {
      this.running = undefined;
    }
  }

  /**
   * People's batches, one at a time, beside the background's: a person's write waits for the
   * counter lock only while another batch's one write statement holds it, not for the whole
   * of a controller's batch (its connection, snapshot read and planning). When it commits
   * first, the background batch's guard fails and that one goes the locked way next, in
   * the lock's queue: a client that writes without pause cannot starve the controllers.
   */
  private async drainPeople(): Promise<void> {
    try {
      while (this.peopleQueue.length > 0) await this.runBatch(this.peopleQueue.splice(0, this.opts.maxBatch), 'people');
    } finally {
      this.peopleRunning = undefined;
    }
  }

  private async runBatch(items: WriteItem[], lane: Lane): Promise<void> {
    let attempt = 1;
    while (await this.tryBatch(items, attempt < ABORTED_ATTEMPTS, lane)) attempt++;
  }

  /** One attempt; true when Postgres aborted it (deadlock, serialization) and it may go again. */
  private async tryBatch(items: WriteItem[], mayRetry: boolean, lane: Lane): Promise<boolean> {
    const started = performance.now();
    let client: pg.PoolClient;
    try {
      client = await (lane === 'people' ? this.opts.people() : this.pool.connect());
    } catch (e) {
      const err = pgFailure(e, this.opts.target);
      for (const it of items) it.reject(err);
      return false;
    }
    let committing = false;
    let broken: unknown;
    let settleOwn: (() => void) | undefined;
    // A connection that dies between our queries emits 'error' on the client; without a
    // listener that would crash the process. The next query then fails and we classify it.
    const onError = (e: unknown) => {
      broken ??= e;
    };
    client.on('error', onError);
    try {
      const settled = await this.atSnapshot(client, items, () => (committing = true), lane, (before) => (settleOwn = this.opts.ownCommit?.(before)));
      committing = false; // overtaken: nothing was written
      const { outcomes, before, after, batches } = settled ?? (await this.locked(client, items, () => (committing = true)));
      const way: BatchWay = settled ? 'snapshot' : 'locked';
      this.opts.observer?.committed?.({ batchSize: items.length, seconds: (performance.now() - started) / 1000, way });
      if (after > before) this.opts.onCommit(after, { before, batches });
      items.forEach((it, i) => {
        const o = outcomes[i]!;
        if (o.ok) (it.resolve as (v: unknown) => void)(o.value);
        else it.reject(o.error);
      });
      return false;
    } catch (e) {
      this.known.forget(); // the outcome may be unknown
      await client.query('ROLLBACK').catch(() => undefined);
      // Postgres chose this transaction as a deadlock's victim (or a serialization failure):
      // it rolled back, nothing was written, and the same batch can simply go again.
      if (mayRetry && abortedByPostgres(e)) return true;
      broken = e;
      const err = pgFailure(e, this.opts.target, committing);
      for (const it of items) it.reject(err);
      return false;
    } finally {
      settleOwn?.();
      client.off('error', onError);
      client.release(broken instanceof Error && !isCcaError(broken) ? broken : undefined);
    }
  }

  /**
   * The short way (batch-apply.ts planAtSnapshot): plan from a snapshot read without the
   * lock, commit in one guarded statement. Undefined when the batch must go the locked way:
   * it cannot be planned from a snapshot, or another writer moved the head between the read
   * and the commit (then the next batch goes the locked way at once, too).
   */
  private async atSnapshot(client: pg.PoolClient, items: WriteItem[], committing: () => void, lane: Lane, sending: (before: number) => void): Promise<Applied | undefined> {
    // The known rows are the background's: people's batches read a snapshot of their own,
    // and a commit of theirs moves the head past what the background knows.
    const background = lane === 'background';
    if (background && this.overtaken) {
      this.overtaken = false;
      return undefined;
    }
    // A person's batch beside a background one in flight takes the counter lock first (the
    // locked way): a snapshot plan would race that batch's commit, and lose to it often (its
    // plan may need no read at all: known-rows.ts), then wait for the lock all the same.
    if (!background && this.running) return undefined;
    const plan = await planAtSnapshot(client, items, background ? this.known : undefined);
    if (!plan) return undefined;
    const applied = { outcomes: plan.outcomes, before: plan.guard.revision, after: plan.after, batches: plan.batches };
    if (plan.rows.length === 0) return applied;
    sending(plan.guard.revision);
    if (await commitPlan(client, plan, { hook: this.opts.hook, committing })) {
      if (background) this.known.committed(plan.guard.revision, plan.after, plan.rows);
      else this.known.forget();
      return applied;
    }
    if (background) this.overtaken = true;
    this.known.forget();
    return undefined;
  }

  /** The locked way: BEGIN and the counter lock first, then read, evaluate, write, COMMIT. */
  private async locked(client: pg.PoolClient, items: WriteItem[], committing: () => void): Promise<Applied> {
    this.known.forget();
    const out = await applyWrites(client, items, { hook: this.opts.hook, begin: true });
    committing();
    await client.query('COMMIT');
    return out;
  }

}

/** Which queue a batch came from: the background's (controllers, agents) or people's. */
type Lane = 'background' | 'people';

/** Attempts of a batch that Postgres aborts as a deadlock's victim or a serialization failure. */
export const ABORTED_ATTEMPTS = 3;
