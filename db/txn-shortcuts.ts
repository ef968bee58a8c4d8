import type { KeyValue, TxnRequest, TxnResponse } from './store.js';

type Txn = (req: TxnRequest) => Promise<TxnResponse>;

/** `put` as the one-op txn it is, so every backend gives it the txn's exact semantics. */
export async function putViaTxn(txn: Txn, key: string, value: string, opts: { lease?: number; prevKv?: boolean } = {}) {
  const r = await txn({ compare: [], success: [{ put: { key, value, ...opts } }] });
  const resp = r.responses[0] as { put: { prevKv?: KeyValue } };
  return resp.put.prevKv ? { revision: r.revision, prevKv: resp.put.prevKv } : { revision: r.revision };
}

/** `delete` as the one-op txn it is. */
export async function deleteViaTxn(txn: Txn, key: string, opts: { prefix?: boolean; prevKv?: boolean } = {}) {
  const r = await txn({ compare: [], success: [{ delete: { key, ...opts } }] });
  const resp = r.responses[0] as { delete: { deleted: number; prevKvs?: KeyValue[] } };
  return { revision: r.revision, ...resp.delete };
}
