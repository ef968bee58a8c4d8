import { CcaError } from '../../core/diagnostics/index.js';
import { checkRangeOptions, intervalOf } from '../keyspace.js';
import type { RangeRequest, RangeResponse } from '../store.js';
import type { Db } from './sql/db.js';
import { readRange } from './sql/readRange.js';

/** A Store range over any connection: validation, the query, and etcd's revision errors. */
export async function rangeOn(db: Db, req: RangeRequest): Promise<RangeResponse> {
  const iv = intervalOf(req);
  checkRangeOptions(req);
  const at = req.revision ?? 0;
  const r = await readRange(db, iv, {
    revision: at,
    limit: req.limit ?? 0,
    reverse: req.reverse ?? false,
    keysOnly: req.keysOnly ?? false,
    countOnly: req.countOnly ?? false,
  });
  if (at > r.head) throw new CcaError('CCA-E0102', { revision: at, current: r.head });
  if (at !== 0 && at < r.compactRevision) {
    throw new CcaError('CCA-E0101', { revision: at, compactRevision: r.compactRevision });
  }
  const limit = req.limit ?? 0;
  return { kvs: r.kvs, count: r.count, more: !req.countOnly && limit > 0 && r.count > limit, revision: r.head };
}
