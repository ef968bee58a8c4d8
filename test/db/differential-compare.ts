import { isDeepStrictEqual } from 'node:util';
import type { WatchBatch } from '../../db/store.js';
import type { WatchOutcome } from './differential-backends.js';

/**
 * The allowed differences between raw etcd (the oracle) and the Store backends. Everything
 * else — revisions, versions, create/mod revisions, succeeded flags, range results,
 * more/count, lease keys, watch events, error codes and compact revisions — must match
 * exactly. docs/store-etcd.md explains each one.
 *
 * 1. Idempotent put. The Store writes nothing for a put of the value and lease a key already
 *    has; etcd writes a new revision. Most histories never do that (every put carries a value
 *    unique in its history), so revisions stay comparable with etcd. One in five repeats
 *    values on purpose and is compared between the Store backends only (memory as reference).
 * 2. Events at exactly the compact revision. etcd 3.4.23 (Debian's) compacts at C by keeping
 *    the newest revision ≤ C of each key unless it is a tombstone, so a watch from C never
 *    sees a delete at C (etcd-io/etcd#18089, fixed by #18274 in later releases); and a watch
 *    looks up prevKv at rev−1 < C, which is compacted, so an event at C comes without prevKv
 *    on every etcd version. The Store keeps both: a watch from its compact revision is
 *    complete. Here, in a watch from C, deletes at C are dropped and puts at C lose their
 *    prevKv on both sides before comparing (`watchAsEtcd`), so the test holds on fixed and
 *    unfixed etcd alike. The conformance suite checks the Store's side exactly.
 * 3. Lease TTL countdown. `leaseTimeToLive().ttl` depends on the clock: both sides report
 *    "alive" (≥ 0) or −1 (unknown); grantedTtl and keys are compared exactly.
 * 4. keepAlive of an unknown lease: etcd answers TTL 0, the Store throws CCA-E0107. The
 *    oracle adapter reports etcd's TTL 0 as CCA-E0107.
 * 5. Inverted ranges are not generated: etcd answers them with nothing, the Store refuses them
 *    (CCA-E0106) by contract.
 * 6. Compaction under a live watch is not generated: etcd looks up a live event's prevKv
 *    when it sends it, so compacting right after the event races with that lookup.
 *
 * Mapped rather than different: etcd's lease ids are random 63-bit numbers (compared by
 * grant order); etcd and the shared Postgres store run many histories, so revisions are
 * compared as offsets from each history's start and keys under a per-history prefix.
 */
export function watchAsEtcd(w: WatchOutcome, compactRevision: number): WatchOutcome {
  if (compactRevision <= 0 || w.err) return w;
  const batches: WatchBatch[] = [];
  for (const b of w.batches) {
    if (b.revision !== compactRevision) {
      batches.push(b);
      continue;
    }
    const events = b.events.filter((e) => e.type === 'put').map((e) => ({ type: e.type, kv: e.kv }));
    if (events.length > 0) batches.push({ revision: b.revision, events });
  }
  return { batches };
}

/** Only the batches up to `through` (the fence revision) are compared. */
export function upTo(w: WatchOutcome, through: number): WatchOutcome {
  return { ...w, batches: w.batches.filter((b) => b.revision <= through) };
}

export function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}
