import { CcaError } from '../../core/diagnostics/error.js';
import type { Store, TxnRequest, RangeRequest, WatchRequest, WatchBatch } from '../../db/store.js';

/** How a party reaches the store right now. */
export type Reach = 'up' | 'store-down' | 'unreachable';

/** The network between an agent and the control plane is cut (a partition), as opposed to the store being down. */
export class Unreachable extends Error {
  constructor() {
    super('the control plane is unreachable');
    this.name = 'Unreachable';
  }
}

/**
 * A Store seen through a fault: with the store down every call fails with CCA-E0111 (what
 * the server answers when its database is gone); partitioned, every call fails as a
 * network error. Controllers and each agent get their own view of the same store.
 */
export class GatedStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly reach: () => Reach,
  ) {}

  private gate(): void {
    const r = this.reach();
    if (r === 'store-down') throw new CcaError('CCA-E0111', { backend: 'memory', reason: 'simulated outage', target: 'the simulated store' });
    if (r === 'unreachable') throw new Unreachable();
  }

  async revision() { this.gate(); return this.inner.revision(); }
  async get(key: string, opts?: { revision?: number }) { this.gate(); return this.inner.get(key, opts); }
  async getMany(keys: readonly string[]) { this.gate(); return this.inner.getMany(keys); }
  async range(req: RangeRequest) { this.gate(); return this.inner.range(req); }
  async put(key: string, value: string, opts?: { lease?: number; prevKv?: boolean }) { this.gate(); return this.inner.put(key, value, opts); }
  async delete(key: string, opts?: { prefix?: boolean; prevKv?: boolean }) { this.gate(); return this.inner.delete(key, opts); }
  async txn(req: TxnRequest) { this.gate(); return this.inner.txn(req); }
  watch(req: WatchRequest): AsyncIterable<WatchBatch> { this.gate(); return this.inner.watch(req); }
  async grantLease(ttl: number) { this.gate(); return this.inner.grantLease(ttl); }
  async keepAlive(id: number) { this.gate(); return this.inner.keepAlive(id); }
  async revokeLease(id: number) { this.gate(); return this.inner.revokeLease(id); }
  async leaseTimeToLive(id: number) { this.gate(); return this.inner.leaseTimeToLive(id); }
  async leasesTimeToLive(ids: readonly number[]) { this.gate(); return this.inner.leasesTimeToLive(ids); }
  async leases() { this.gate(); return this.inner.leases(); }
  async compact(rev: number) { this.gate(); return this.inner.compact(rev); }
  async close() { return this.inner.close(); }
}
