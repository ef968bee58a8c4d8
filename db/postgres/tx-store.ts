import type pg from 'pg';
import { CcaError } from '../../core/diagnostics/index.js';
import { checkLeaseTtl, intervalOf } from '../keyspace.js';
import type { RangeRequest, RangeResponse, Store, TxnRequest, TxnResponse, WatchBatch } from '../store.js';
import { validateTxn } from '../txn-eval.js';
import { StoreShortcuts } from '../store-shortcuts.js';
import { applyWrites, type CommitHook, type WriteRequest } from './batch-apply.js';
import { pgFailure } from './errors.js';
import { rangeOn } from './range.js';
import * as leaseSql from './sql/leases.js';
import { readHead } from './sql/readHead.js';

/**
 * The Store over one connection inside a transaction its owner opened and will commit:
 * a controller step run as a graphile-worker job uses it, so the whole step — its reads,
 * its writes, and the follow-up jobs they enqueue — commits or rolls back as one.
 * Reads see the step's own writes. The first write takes the revision counter's lock,
 * held until the owner commits, so writers stay serialised and revisions gap-free.
 */
export class PostgresTxStore extends StoreShortcuts implements Store {
  constructor(
    private readonly client: pg.ClientBase,
    private readonly opts: { hook?: CommitHook; target: string },
  ) {
    super();
  }

  async revision(): Promise<number> {
    return (await this.q(() => readHead(this.client))).revision;
  }

  range(req: RangeRequest): Promise<RangeResponse> {
    intervalOf(req);
    return this.q(() => rangeOn(this.client, req));
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    validateTxn(req);
    return (await this.write({ kind: 'txn', req })) as TxnResponse;
  }

  watch(): AsyncIterable<WatchBatch> {
    throw new CcaError('CCA-E0122', { operation: 'watch' });
  }

  async grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    checkLeaseTtl(ttlSeconds);
    return { id: await this.q(() => leaseSql.grantLease(this.client, ttlSeconds)), ttl: ttlSeconds };
  }

  async keepAlive(id: number): Promise<{ ttl: number }> {
    const ttl = await this.q(() => leaseSql.keepAliveLease(this.client, id));
    if (ttl === null) throw new CcaError('CCA-E0107', { lease: id });
    return { ttl };
  }

  async revokeLease(id: number): Promise<{ revision: number }> {
    return (await this.write({ kind: 'revoke', lease: id })) as { revision: number };
  }

  async leaseTimeToLive(id: number) {
    return (await this.q(() => leaseSql.leaseTimeToLive(this.client, id))) ?? { ttl: -1, grantedTtl: 0, keys: [] };
  }

  async leases(): Promise<{ id: number }[]> {
    return (await this.q(() => leaseSql.listLiveLeases(this.client))).map((id) => ({ id }));
  }

  compact(): Promise<void> {
    throw new CcaError('CCA-E0122', { operation: 'compact' });
  }

  async close(): Promise<void> {}

  private async write(request: WriteRequest): Promise<unknown> {
    const { outcomes } = await this.q(() => applyWrites(this.client, [request], { hook: this.opts.hook }));
    const o = outcomes[0]!;
    if (!o.ok) throw o.error;
    return o.value;
  }

  /** One connection runs one statement at a time: a step's parallel reads queue here. */
  private tail: Promise<unknown> = Promise.resolve();

  private q<T>(f: () => Promise<T>): Promise<T> {
    const run = this.tail.then(f, f).catch((e: unknown) => {
      throw pgFailure(e, this.opts.target);
    });
    this.tail = run.catch(() => undefined);
    return run;
  }
}
