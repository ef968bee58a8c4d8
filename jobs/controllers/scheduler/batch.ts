import type { Compare, Op, TxnRequest } from '../../../db/store.js';
import { uniqueCompares } from '../../facts.js';
import { writeBytes, type Write } from '../../write.js';

/** The store's per-branch limit is 128; leave room so one group never overflows. */
export const MAX_OPS = 120;
/**
 * Keys and values per txn: etcd refuses a request over its --max-request-bytes (1.5 MiB by
 * default, CCA-E0121), and EtcdStore sends each put's value twice (its idempotent put
 * compares the value first: db/etcd/txn.ts), so 640 KiB leaves room for that and framing.
 * Groups are packed up to it; a node's placements keep their group under it (plan-placements.ts).
 */
export const MAX_TXN_BYTES = 655_360;

/**
 * Pack actions into txns: all actions of one group (one node, whose allocation record they
 * all update) stay together, groups are packed until a txn is full. Each txn stands alone:
 * a failed compare drops only its own actions, and the next step plans them again. Lazy:
 * a txn's groups are taken from `groups` (which may build them then) as the txn is taken.
 */
export function* packTxns(groups: Iterable<Write>): Generator<TxnRequest, void, undefined> {
  let compare: Compare[] = [];
  let success: Op[] = [];
  let bytes = 0;
  for (const g of groups) {
    const cs = uniqueCompares(g.compares);
    const b = writeBytes(g);
    if (success.length > 0 && (success.length + g.ops.length > MAX_OPS || compare.length + cs.length > MAX_OPS || bytes + b > MAX_TXN_BYTES)) {
      yield { compare: uniqueCompares(compare), success };
      compare = [];
      success = [];
      bytes = 0;
    }
    compare.push(...cs);
    success.push(...g.ops);
    bytes += b;
  }
  if (success.length > 0) yield { compare: uniqueCompares(compare), success };
}
