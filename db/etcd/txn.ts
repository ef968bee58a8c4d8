import type { ICompare, IRangeRequest, IRangeResponse, IRequestOp, IResponseOp, ITxnRequest, ITxnResponse } from 'etcd3';
import { intervalOf } from '../keyspace.js';
import type { Compare, KeyValue, Op, OpResponse, RangeRequest, TxnRequest } from '../store.js';
import { deleteInterval } from '../txn-eval.js';
import type { EtcdKeys } from './keys.js';

/**
 * Store transactions as etcd transactions. Pure: no I/O, so the mapping can be read (and
 * tested) on its own.
 *
 * Two things are added on the way:
 * - **idempotent put**: every put becomes a nested txn "if value = v and lease = l then
 *   (read it) else put", so a put of what the key already holds writes nothing and, when
 *   nothing else in the branch writes, consumes no revision — decided inside etcd, in the
 *   same transaction, so there is no read-then-write race.
 * - **compaction shift**: EtcdStore compacts etcd at R−1 when asked to compact at R (see
 *   store.ts), so a read at revision r must also prove that r−1 is not compacted. Each
 *   range at a past revision becomes a nested txn "count-only read at r−1, then the read",
 *   so etcd's checks (every range of the taken branch, in order, before anything is
 *   applied) meet the compaction check just before the read it guards: the first range
 *   that cannot be served decides the error (compacted or future), as on raw etcd.
 */

const targets = {
  value: 'Value',
  version: 'Version',
  createRevision: 'Create',
  modRevision: 'Mod',
  lease: 'Lease',
} as const;
const results = { '=': 'Equal', '!=': 'NotEqual', '<': 'Less', '>': 'Greater' } as const;

export function mapCompare(keys: EtcdKeys, c: Compare): ICompare {
  const base = { key: keys.key(c.key), target: targets[c.target], result: results[c.op] };
  switch (c.target) {
    case 'value':
      return { ...base, value: Buffer.from(c.value as string, 'utf8') };
    case 'version':
      return { ...base, version: c.value as number };
    case 'createRevision':
      return { ...base, create_revision: c.value as number };
    case 'modRevision':
      return { ...base, mod_revision: c.value as number };
    case 'lease':
      return { ...base, lease: c.value as number };
  }
}

export function mapRange(keys: EtcdKeys, r: RangeRequest): IRangeRequest {
  return {
    ...keys.range(intervalOf(r)),
    revision: r.revision ?? 0,
    limit: r.limit ?? 0,
    sort_order: r.reverse ? 'Descend' : 'None',
    sort_target: 'Key',
    keys_only: r.keysOnly ?? false,
    count_only: r.countOnly ?? false,
  };
}

/** The idempotent put: writes only when the value or the lease differs. */
export function mapPut(keys: EtcdKeys, p: { key: string; value: string; lease?: number; prevKv?: boolean }): ITxnRequest {
  const key = keys.key(p.key);
  const value = Buffer.from(p.value, 'utf8');
  const lease = p.lease ?? 0;
  return {
    compare: [
      { key, target: 'Value', result: 'Equal', value },
      { key, target: 'Lease', result: 'Equal', lease },
    ],
    success: p.prevKv ? [{ request_range: { key } }] : [],
    failure: [{ request_put: { key, value, lease, prev_kv: p.prevKv ?? false } }],
  };
}

function mapOp(keys: EtcdKeys, op: Op): IRequestOp {
  if ('put' in op) return { request_txn: mapPut(keys, op.put) };
  if ('delete' in op) {
    return { request_delete_range: { ...keys.range(deleteInterval(op.delete)), prev_kv: op.delete.prevKv ?? false } };
  }
  if (readsPast(op.range)) {
    const check: IRequestOp = { request_range: { key: keys.probeKey(), revision: op.range.revision! - 1, count_only: true } };
    return { request_txn: { compare: [], success: [check, { request_range: mapRange(keys, op.range) }], failure: [] } };
  }
  return { request_range: mapRange(keys, op.range) };
}

/** A read at revision r ≥ 2 needs r−1 to be uncompacted too (a read at 1 has nothing below). */
function readsPast(r: RangeRequest): boolean {
  return (r.revision ?? 0) >= 2;
}

export function mapBranch(keys: EtcdKeys, ops: Op[]): IRequestOp[] {
  return ops.map((op) => mapOp(keys, op));
}

export function mapTxn(keys: EtcdKeys, req: TxnRequest): ITxnRequest {
  return {
    compare: req.compare.map((c) => mapCompare(keys, c)),
    success: mapBranch(keys, req.success),
    failure: mapBranch(keys, req.failure ?? []),
  };
}

export function decodeRange(keys: EtcdKeys, r: IRangeResponse): { kvs: KeyValue[]; count: number; more: boolean } {
  return { kvs: r.kvs.map((kv) => keys.kv(kv)), count: Number(r.count), more: r.more };
}

/** The Store's put answer from the nested idempotent-put txn's answer. */
export function decodePut(keys: EtcdKeys, t: ITxnResponse, wantPrev: boolean): { prevKv?: KeyValue } {
  if (!wantPrev) return {};
  if (t.succeeded) {
    const cur = t.responses[0]?.response_range?.kvs[0];
    return cur ? { prevKv: keys.kv(cur) } : {};
  }
  const prev = t.responses[0]?.response_put?.prev_kv;
  return prev ? { prevKv: keys.kv(prev) } : {};
}

function decodeOp(keys: EtcdKeys, op: Op, r: IResponseOp): OpResponse {
  if ('put' in op) return { put: decodePut(keys, r.response_txn, op.put.prevKv ?? false) };
  if ('delete' in op) {
    const d = r.response_delete_range;
    const deleted = Number(d.deleted);
    return { delete: op.delete.prevKv ? { deleted, prevKvs: d.prev_kvs.map((kv) => keys.kv(kv)) } : { deleted } };
  }
  const range = readsPast(op.range) ? r.response_txn.responses[1]!.response_range : r.response_range;
  return { range: decodeRange(keys, range) };
}

export function decodeBranch(keys: EtcdKeys, ops: Op[], responses: IResponseOp[]): OpResponse[] {
  return ops.map((op, i) => decodeOp(keys, op, responses[i]!));
}
