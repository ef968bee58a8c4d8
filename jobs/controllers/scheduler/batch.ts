import type { Compare, Op, Store, TxnRequest } from '../../../db/store.js';
import { uniqueCompares } from '../../facts.js';
import type { Write } from '../../write.js';

/** The store's per-branch limit is 128; leave room so one group never overflows. */
export const MAX_OPS = 120;

/**
 * Pack actions into txns: all actions of one group (one node, whose allocation record they
 * all update) stay together, groups are packed until a txn is full. Each txn stands alone:
 * a failed compare drops only its own actions, and the next step plans them again.
 */
export function packTxns(groups: Map<string, Write>): TxnRequest[] {
  const txns: TxnRequest[] = [];
  let compare: Compare[] = [];
  let success: Op[] = [];
  for (const g of groups.values()) {
    const cs = uniqueCompares(g.compares);
    if (success.length > 0 && (success.length + g.ops.length > MAX_OPS || compare.length + cs.length > MAX_OPS)) {
      txns.push({ compare: uniqueCompares(compare), success });
      compare = [];
      success = [];
    }
    compare.push(...cs);
    success.push(...g.ops);
  }
  if (success.length > 0) txns.push({ compare: uniqueCompares(compare), success });
  return txns;
}

/**
 * Issue txns with up to `concurrency` in flight (a sliding window: PostgresStore commits
 * whatever has queued while its previous batch committed, so a full window means fewer,
 * larger Postgres transactions). Returns how many failed their compares.
 */
export async function commitAll(store: Store, txns: readonly TxnRequest[], concurrency = 16): Promise<number> {
  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < txns.length) {
      const t = txns[next++]!;
      if (!(await store.txn(t)).succeeded) failed++;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, txns.length)) }, worker));
  return failed;
}
