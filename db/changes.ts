import type { WatchEvent } from './store.js';

/** A committed change to one key, as commit hooks and change routing see it. */
export interface StoreChange {
  key: string;
  deleted: boolean;
  /**
   * The key's value before and after, when known (a put over an existing value, seen with
   * its previous value): what lets a controller pass over a change it cannot act on.
   */
  before?: string;
  after?: string;
}

/**
 * The drivers' changes from watch events, each key once: deleted when any of its events
 * deleted it (a wake for deletions must not be lost); its values when every event on it
 * was a put and the first carried the value before (the watch was asked for prevKv).
 */
export function changesOfEvents(events: Iterable<Pick<WatchEvent, 'type' | 'kv' | 'prevKv'>>): StoreChange[] {
  const out = new Map<string, StoreChange>();
  for (const e of events) {
    const seen = out.get(e.kv.key);
    if (e.type === 'delete') out.set(e.kv.key, { key: e.kv.key, deleted: true });
    else if (!seen) out.set(e.kv.key, e.prevKv ? { key: e.kv.key, deleted: false, before: e.prevKv.value, after: e.kv.value } : { key: e.kv.key, deleted: false });
    else if (!seen.deleted && seen.before !== undefined) seen.after = e.kv.value;
  }
  return [...out.values()];
}
