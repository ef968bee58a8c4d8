import type { KeyValue, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from './store.js';

/**
 * `get`, `getMany`, `put` and `delete` as what they are in etcd: a range of one key, a txn of
 * ranges, and one-op txns.
 * Every backend extends this, so each has the exact semantics of its own range and txn
 * (validation, leases, prevKv, revisions) and none keeps a copy. EtcdStore overrides put
 * and delete with etcd's own calls, which carry its idempotent-retry rules.
 */
export abstract class StoreShortcuts {
  abstract range(req: RangeRequest): Promise<RangeResponse>;
  abstract txn(req: TxnRequest): Promise<TxnResponse>;

  async get(key: string, opts: { revision?: number } = {}): Promise<KeyValue | null> {
    const r = await this.range({ key, ...(opts.revision !== undefined ? { revision: opts.revision } : {}) });
    return r.kvs[0] ?? null;
  }

  async getMany(keys: readonly string[]): Promise<(KeyValue | null)[]> {
    if (keys.length === 0) return [];
    const r = await this.txn({ compare: [], success: keys.map((key) => ({ range: { key } })) });
    return r.responses.map((resp) => (resp as { range: { kvs: KeyValue[] } }).range.kvs[0] ?? null);
  }

  async put(key: string, value: string, opts: { lease?: number; prevKv?: boolean } = {}): Promise<{ revision: number; prevKv?: KeyValue }> {
    const r = await this.txn({ compare: [], success: [{ put: { key, value, ...opts } }] });
    const resp = r.responses[0] as { put: { prevKv?: KeyValue } };
    return resp.put.prevKv ? { revision: r.revision, prevKv: resp.put.prevKv } : { revision: r.revision };
  }

  async delete(key: string, opts: { prefix?: boolean; prevKv?: boolean } = {}): Promise<{ revision: number; deleted: number; prevKvs?: KeyValue[] }> {
    const r = await this.txn({ compare: [], success: [{ delete: { key, ...opts } }] });
    const resp = r.responses[0] as { delete: { deleted: number; prevKvs?: KeyValue[] } };
    return { revision: r.revision, ...resp.delete };
  }
}
