// The incremental change feed: every source (live: the watch; simulation: the world's store
// watch) emits what changed, one store revision at a time, in order, as it applies it to its
// mirror. Views that draw many items (the cluster map) follow this feed and touch only what
// a batch changed instead of re-reading the whole store.
//
//   feed.subscribe((change) => …)  change = { type: 'batch', batch: { revision, events } }
//                                          | { type: 'reset' }   (listed again: re-read source.facts())
//
// A subscriber that attaches late reads the source's facts at one revision first
// (`source.facts()` → { revision, kvs }), then every batch above that revision.

export class ChangeFeed {
  constructor() {
    this.listeners = new Set();
  }

  /** @returns an unsubscribe function */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  batch(batch) {
    for (const fn of this.listeners) fn({ type: 'batch', batch });
  }

  reset() {
    for (const fn of this.listeners) fn({ type: 'reset' });
  }
}
