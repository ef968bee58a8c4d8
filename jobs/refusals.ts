import { isCcaError } from '../core/diagnostics/error.js';
import type { Store, TxnRequest, TxnResponse } from '../db/store.js';

/**
 * A write the store refused outright — too large, a bad key or value — rather than one that
 * lost a race (a failed compare) or met an outage. Retrying it at once changes nothing.
 */
export interface Refusal {
  /** The first key the write puts or deletes: whose subject it was. */
  key: string;
  /** The store's coded reason ("CCA-E0104 the value for key … is … bytes; …"). */
  reason: string;
}

function firstKey(req: TxnRequest): string {
  const op = req.success[0];
  if (!op) return '(no operation)';
  return 'put' in op && op.put ? op.put.key : 'delete' in op && op.delete ? op.delete.key : '(unknown)';
}

/**
 * The store a step is handed: a txn the store refuses (a non-environment coded error) is set
 * aside into `refused` and answers as a write that changed nothing, so the step goes on with
 * its other subjects' writes and plans the refused one again next time, as after a lost race.
 * An outage (an environment-blamed error) still fails the step. The drivers report each
 * refusal once and back the step off (step-runner.ts, StepBook).
 */
export function guardRefusals(store: Store, refused: Refusal[]): Store {
  const txn = async (req: TxnRequest): Promise<TxnResponse> => {
    try {
      return await store.txn(req);
    } catch (e) {
      if (!isCcaError(e) || e.blame === 'environment') throw e;
      refused.push({ key: firstKey(req), reason: `${e.code} ${e.diagnostic.message}` });
      return { succeeded: false, revision: await store.revision(), responses: [] };
    }
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'txn') return txn;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
