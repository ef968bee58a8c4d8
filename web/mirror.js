// The live mode's local copy of the facts the views read: the server's key-values exactly
// as listed and watched (create/mod revision, version and lease kept, so a node's tenure —
// its create revision — means what it means on the server). Answers the one Store call
// the status views make, `range({ prefix })`, from a snapshot taken at one revision.

export class Mirror {
  constructor(revision, kvs) {
    this.revision = revision;
    this.kvs = new Map(kvs.map((kv) => [kv.key, kv]));
  }

  /** Apply one watch batch (one revision), in order. */
  apply(batch, keep) {
    for (const e of batch.events) {
      if (!keep(e.kv.key)) continue;
      if (e.type === 'put') this.kvs.set(e.kv.key, e.kv);
      else this.kvs.delete(e.kv.key);
    }
    this.revision = batch.revision;
  }

  /** A read-only view at the current revision: later batches do not change it. */
  snapshot() {
    const revision = this.revision;
    const sorted = [...this.kvs.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return {
      async revision() {
        return revision;
      },
      async range({ prefix = '' }) {
        const kvs = sorted.filter((kv) => kv.key.startsWith(prefix));
        return { revision, kvs, count: kvs.length, more: false };
      },
      async get(key) {
        return sorted.find((kv) => kv.key === key) ?? null;
      },
    };
  }
}
