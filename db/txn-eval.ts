import { CcaError } from '../core/diagnostics/index.js';
import {
  checkCompare,
  checkKey,
  checkRangeOptions,
  checkReadRevision,
  checkValue,
  compareKeys,
  evalCompare,
  inInterval,
  intervalOf,
  limits,
  shapeRange,
  type KeyInterval,
} from './keyspace.js';
import type { KeyValue, Op, OpResponse, RangeRequest, TxnRequest, WatchEvent } from './store.js';

/**
 * What a backend shows the evaluator: the committed state just before this client
 * transaction. Every backend evaluates transactions with this one function, so the
 * semantics (compares, idempotent puts, versions, errors) cannot drift between them.
 */
export interface TxnView {
  /** The revision of the state this view shows. */
  readonly revision: number;
  readonly compactRevision: number;
  get(key: string): KeyValue | undefined;
  /** Current keys in the interval, in key order. */
  range(iv: KeyInterval): KeyValue[];
  /** Keys in the interval as of an older revision (compactRevision ≤ rev < revision). */
  rangeAt(iv: KeyInterval, revision: number): KeyValue[];
  leaseExists(id: number): boolean;
}

export interface TxnOutcome {
  succeeded: boolean;
  responses: OpResponse[];
  /** Empty when the taken branch changed nothing: then no revision is consumed. */
  events: WatchEvent[];
}

/** Validate a whole request before touching anything, as etcd does. */
export function validateTxn(req: TxnRequest): void {
  if (!Array.isArray(req.compare) || !Array.isArray(req.success) || (req.failure && !Array.isArray(req.failure))) {
    throw new CcaError('CCA-E0106', { reason: 'a txn needs compare and success arrays' });
  }
  for (const [name, ops] of [['compare', req.compare], ['success', req.success], ['failure', req.failure ?? []]] as const) {
    if (ops.length > limits.maxTxnOps) throw new CcaError('CCA-E0109', { ops: ops.length, max: limits.maxTxnOps, branch: name });
  }
  for (const c of req.compare) checkCompare(c);
  validateBranch(req.success);
  validateBranch(req.failure ?? []);
}

function validateBranch(ops: Op[]): void {
  const puts = new Set<string>();
  const deletes: KeyInterval[] = [];
  for (const op of ops) {
    if ('put' in op) {
      checkKey(op.put.key);
      checkValue(op.put.key, op.put.value);
      checkLease(op.put.lease);
      if (puts.has(op.put.key)) throw new CcaError('CCA-E0110', { key: op.put.key });
      puts.add(op.put.key);
    } else if ('delete' in op) {
      deletes.push(deleteInterval(op.delete));
    } else if ('range' in op) {
      intervalOf(op.range);
      checkRangeOptions(op.range);
    } else {
      throw new CcaError('CCA-E0106', { reason: 'an op must be put, delete or range' });
    }
  }
  for (const key of puts) {
    if (deletes.some((iv) => inInterval(key, iv))) throw new CcaError('CCA-E0110', { key });
  }
}

export function checkLease(lease: number | undefined): void {
  if (lease !== undefined && (!Number.isSafeInteger(lease) || lease < 0)) {
    throw new CcaError('CCA-E0107', { lease: String(lease) });
  }
}

export function deleteInterval(d: { key: string; prefix?: boolean }): KeyInterval {
  return d.prefix ? intervalOf({ prefix: d.key }) : intervalOf({ key: d.key });
}

export function tombstone(key: string, revision: number): KeyValue {
  return { key, value: '', createRevision: 0, modRevision: revision, version: 0, lease: 0 };
}

/**
 * Evaluate one validated client transaction against `view` as if it commits at
 * `view.revision + 1`. Pure: the backend applies the returned events itself.
 */
export function evaluateTxn(view: TxnView, req: TxnRequest): TxnOutcome {
  const succeeded = req.compare.every((c) => evalCompare(c, view.get(c.key)));
  const ops = succeeded ? req.success : req.failure ?? [];
  // etcd checks the taken branch's leases before its ranges and before applying anything
  // (applierV3backend.Txn: checkRequests with checkPut, then with checkRange), so a missing
  // lease wins over a bad revision whatever the order of the ops.
  for (const op of ops) {
    const lease = 'put' in op ? op.put.lease ?? 0 : 0;
    if (lease !== 0 && !view.leaseExists(lease)) throw new CcaError('CCA-E0107', { lease });
  }
  const rev = view.revision + 1;
  // Writes earlier in the txn are visible to later ranges in it (etcd's txnWrite.Range).
  const overlay = new Map<string, KeyValue | null>();
  const current = (key: string) => (overlay.has(key) ? overlay.get(key) ?? undefined : view.get(key));
  const rangeNow = (iv: KeyInterval): KeyValue[] => {
    if (overlay.size === 0) return view.range(iv);
    const merged = new Map(view.range(iv).map((kv) => [kv.key, kv] as const));
    for (const [k, v] of overlay) {
      if (!inInterval(k, iv)) continue;
      if (v) merged.set(k, v);
      else merged.delete(k);
    }
    return [...merged.values()].sort((a, b) => compareKeys(a.key, b.key));
  };

  const events: WatchEvent[] = [];
  const responses: OpResponse[] = [];
  for (const op of ops) {
    if ('put' in op) {
      const { key, value, prevKv } = op.put;
      const lease = op.put.lease ?? 0;
      const prev = current(key);
      if (!(prev && prev.value === value && prev.lease === lease)) {
        const kv: KeyValue = {
          key,
          value,
          createRevision: prev ? prev.createRevision : rev,
          modRevision: rev,
          version: prev ? prev.version + 1 : 1,
          lease,
        };
        overlay.set(key, kv);
        events.push(prev ? { type: 'put', kv, prevKv: prev } : { type: 'put', kv });
      }
      responses.push({ put: prevKv && prev ? { prevKv: prev } : {} });
    } else if ('delete' in op) {
      const doomed = rangeNow(deleteInterval(op.delete));
      for (const prev of doomed) {
        overlay.set(prev.key, null);
        events.push({ type: 'delete', kv: tombstone(prev.key, rev), prevKv: prev });
      }
      responses.push({ delete: op.delete.prevKv ? { deleted: doomed.length, prevKvs: doomed } : { deleted: doomed.length } });
    } else {
      const r = op.range;
      const iv = intervalOf(r);
      const all = readRange(view, iv, r, rangeNow);
      responses.push({ range: shapeRange(all, r) });
    }
  }
  return { succeeded, responses, events };
}

function readRange(view: TxnView, iv: KeyInterval, r: RangeRequest, rangeNow: (iv: KeyInterval) => KeyValue[]): KeyValue[] {
  const at = r.revision ?? 0;
  // etcd checks every range of a txn against the state before it (applierV3backend.checkRange):
  // the txn's own pending revision is a future one, even after the txn wrote.
  return at === 0 ? rangeNow(iv) : readAt(view, iv, at);
}

/** The keys in `iv` as of `at` (0: the view's own revision), refused as etcd refuses a read (checkReadRevision). */
export function readAt(view: TxnView, iv: KeyInterval, at: number): KeyValue[] {
  checkReadRevision(at, view.revision, view.compactRevision);
  return at === 0 || at === view.revision ? view.range(iv) : view.rangeAt(iv, at);
}
