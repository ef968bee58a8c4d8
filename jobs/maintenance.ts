import type { Store } from '../db/store.js';

export interface CompactionPolicy {
  /** Revisions of history kept behind the head (watches and reads at older revisions need them). */
  retainRevisions: number;
}

export const defaultCompaction: CompactionPolicy = { retainRevisions: 10_000 };

/** Where to compact to now, or undefined when there is not enough history to bother. */
export function compactionTarget(head: number, policy: CompactionPolicy = defaultCompaction): number | undefined {
  const target = head - policy.retainRevisions;
  return target > 1 ? target : undefined;
}

/** One compaction pass: a target that is already compacted (another pod got there first) is fine. */
export async function compactOnce(store: Store, policy: CompactionPolicy = defaultCompaction): Promise<number | undefined> {
  const target = compactionTarget(await store.revision(), policy);
  if (target === undefined) return undefined;
  try {
    await store.compact(target);
    return target;
  } catch (e) {
    if ((e as { code?: string }).code === 'CCA-E0101') return undefined;
    throw e;
  }
}
