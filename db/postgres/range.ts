import { checkRangeOptions, checkReadRevision, intervalOf } from '../keyspace.js';
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
  checkReadRevision(at, r.head, r.compactRevision);
  const limit = req.limit ?? 0;
  return { kvs: r.kvs, count: r.count, more: !req.countOnly && limit > 0 && r.count > limit, revision: r.head };
}
