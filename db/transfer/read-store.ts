import type { Store } from '../store.js';
import type { KeyRecord, LeaseRecord, SnapshotSource } from './format.js';

/** Every live key at `revision`, in key order, `page` at a time. */
async function* keysAt(store: Store, revision: number, page: number): AsyncIterable<KeyRecord> {
  let after: string | undefined;
  for (;;) {
    // From the last key read (inclusive, then skipped): keys hold no NUL, so nothing sorts between.
    const r = await store.range(after === undefined ? { prefix: '', revision, limit: page } : { start: after, revision, limit: page + 1 });
    const kvs = after === undefined ? r.kvs : r.kvs.filter((kv) => kv.key !== after);
    for (const kv of kvs) yield { k: kv.key, v: kv.value, ...(kv.lease ? { l: kv.lease } : {}) };
    if (!r.more || kvs.length === 0) return;
    after = kvs.at(-1)!.key;
  }
}

/**
 * A store as a snapshot source: one revision R (the current one when called), every key
 * read at R. Two passes at R, which see the same keys: the first finds the leases the keys
 * are attached to and their TTLs; the second streams the keys. A lease that expired or
 * was revoked after R is left out with its keys (its expiry deleted them in the source
 * too). A compaction past R while this reads fails it with CCA-E0101.
 */
export async function storeSource(store: Store, page = 500): Promise<SnapshotSource & { dropped: number }> {
  const revision = await store.revision();
  const attached = new Map<number, number>();
  let total = 0;
  for await (const r of keysAt(store, revision, page)) {
    total++;
    if (r.l !== undefined) attached.set(r.l, (attached.get(r.l) ?? 0) + 1);
  }
  const leases: LeaseRecord[] = [];
  let dropped = 0;
  for (const [id, n] of attached) {
    const t = await store.leaseTimeToLive(id);
    if (t.ttl < 0 || t.grantedTtl < 1) dropped += n;
    else leases.push({ lease: id, ttl: t.grantedTtl });
  }
  const live = new Set(leases.map((l) => l.lease));
  return {
    revision,
    keyCount: total - dropped,
    leases,
    dropped,
    async *keys() {
      for await (const r of keysAt(store, revision, page)) if (r.l === undefined || live.has(r.l)) yield r;
    },
  };
}
