import { CcaError } from '../../core/diagnostics/index.js';
import type { Op, Store } from '../store.js';
import type { Progress, SnapshotSource } from './format.js';

/**
 * Puts per transaction. The store allows 128, but EtcdStore sends each put as a nested
 * etcd txn (read, or put) and etcd counts those against its own --max-txn-ops (128), so
 * 128 puts fail there; 32 stays under it. Bytes: well under etcd's 1.5 MiB request limit.
 */
const MAX_OPS = 32;
const MAX_BYTES = 1 << 20;

export interface RestoreOptions {
  /** Write over a store that already holds keys or leases (default: refuse, CCA-E0153). */
  overwrite?: boolean;
  progress?: Progress;
  /** For messages: the target, its URL redacted. */
  target: string;
}

/**
 * Write a snapshot into a store: every lease granted anew with its full TTL (new ids: the
 * target picks them), then every key with its value, attached to its lease's new id, in
 * transactions of at most 32 puts. The target gets its own revisions; the source's
 * revisions, versions and history are not carried over.
 */
export async function restoreInto(store: Store, source: SnapshotSource, opts: RestoreOptions): Promise<{ keys: number; leases: number; revision: number }> {
  if (!opts.overwrite) {
    const keys = (await store.range({ prefix: '', countOnly: true })).count;
    const leases = (await store.leases()).length;
    if (keys > 0 || leases > 0) throw new CcaError('CCA-E0153', { target: opts.target, keys, leases });
  }
  const ids = new Map<number, number>();
  for (const l of source.leases) ids.set(l.lease, (await store.grantLease(l.ttl)).id);
  let batch: Op[] = [];
  let bytes = 0;
  let done = 0;
  let revision = await store.revision();
  const flush = async () => {
    if (batch.length === 0) return;
    revision = (await store.txn({ compare: [], success: batch })).revision;
    done += batch.length;
    batch = [];
    bytes = 0;
    opts.progress?.(done, source.keyCount);
  };
  for await (const k of source.keys()) {
    const size = Buffer.byteLength(k.k) + Buffer.byteLength(k.v);
    if (batch.length >= MAX_OPS || (batch.length > 0 && bytes + size > MAX_BYTES)) await flush();
    const lease = k.l === undefined ? undefined : ids.get(k.l);
    batch.push({ put: { key: k.k, value: k.v, ...(lease !== undefined ? { lease } : {}) } });
    bytes += size;
  }
  await flush();
  return { keys: done, leases: ids.size, revision };
}
