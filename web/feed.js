// The change feed: the one way views learn what changed. Every source (live: the watch;
// simulation: the world's store watch) emits each store revision, in order, as it applies it
// to its mirror — the whole batch, decisions and events included (the mirror keeps only the
// facts the tables read; the timeline wants the rest). Views that draw many items (the cluster
// map) touch only what a batch changed; the history views (timeline, usage, rollouts) keep
// their session history from it whichever view is open.
//
//   feed.subscribe((change) => …)
//     change = { type: 'batch', batch: { revision, events, at } }   at: ms (virtual in the simulation)
//            | { type: 'reset', fresh? }   listed again: re-read source.facts();
//                                          fresh: a new simulated world, forget the old one
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

  reset({ fresh = false } = {}) {
    for (const fn of this.listeners) fn({ type: 'reset', fresh });
  }
}

/**
 * The feed as the history logs read it: `fn(batch, at)` for each batch, a `{ reset: true }`
 * batch on a fresh reset, and after every reset the source's facts as one batch marked
 * `listing` (the whole picture again). Reads the facts at once if the source has some.
 */
export function followHistory(source, fn) {
  const listing = () => {
    const f = source.facts();
    if (f) fn({ revision: f.revision, listing: true, events: [...f.kvs].map((kv) => ({ type: 'put', kv })) }, source.now());
  };
  listing();
  return source.feed.subscribe((c) => {
    if (c.type === 'batch') return fn(c.batch, c.batch.at ?? source.now());
    if (c.fresh) fn({ reset: true, revision: 0, events: [] }, source.now());
    listing();
  });
}
