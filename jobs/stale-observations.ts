import { buildKey, prefixOf } from '../core/keys.js';
import { limits } from '../db/keyspace.js';
import type { Compare, Op, Store } from '../db/store.js';
import { absent } from './facts.js';

/** Reports of released replicas one report deletes at most: a backlog (an upgrade) goes over several reports. */
export const STALE_OBSERVATIONS_PER_REPORT = 25;

/** What a report's txn may hold of compares and of ops: the store's bound, less the tenure compare. */
export const REPORT_TXN_ROOM = limits.maxTxnOps - 1;

/**
 * A node's reports of replicas no longer assigned to it, as writes its agent's next report
 * carries (the agent is the keys' one writer, DESIGN rule 1). Nothing reads an observation once
 * its replica is released, and the agent may not write it again (a report is admitted only
 * under an assignment), so without this every replica a node ever ran would leave a key
 * behind, and every controller that reads `/observed/` would read them all.
 *
 * `assigned` are the node's assigned replicas as the caller read them, before this reads the
 * observations; each deletion compares its assignment absent, so a replica assigned since makes
 * the write fail and be judged again rather than lose a fresh report. `keep` are the replicas
 * the report itself writes.
 */
export async function staleObservationWrites(
  store: Store,
  node: string,
  assigned: ReadonlySet<string>,
  keep: ReadonlySet<string>,
  room: number,
): Promise<{ compares: Compare[]; ops: Op[] }> {
  const max = Math.min(room, STALE_OBSERVATIONS_PER_REPORT);
  if (max <= 0) return { compares: [], ops: [] };
  const prefix = prefixOf('observed', node);
  const r = await store.range({ prefix, keysOnly: true });
  const compares: Compare[] = [];
  const ops: Op[] = [];
  for (const kv of r.kvs) {
    const replica = kv.key.slice(prefix.length);
    if (assigned.has(replica) || keep.has(replica)) continue;
    compares.push(absent(buildKey('assigned', node, replica)));
    ops.push({ delete: { key: kv.key } });
    if (ops.length >= max) break;
  }
  return { compares, ops };
}
