// A pending replica's reason as the scheduler gave it (its newest decision, through `why`),
// e.g. "no node has image ghost:9", rather than only "not placed yet". Asked for at most
// every few seconds per replica; `onChange` runs when an answer arrives. Shared by the
// services view and the map's tray.

const FRESH_MS = 5_000;
const KEPT = 2_000;

export class PendingReasons {
  constructor(source, onChange) {
    this.source = source;
    this.onChange = onChange;
    this.known = new Map(); // replica id → { at, inflight?, text? }
  }

  /** Ask for the reasons of these replicas (those not asked recently). */
  want(ids) {
    const now = Date.now();
    for (const id of ids) {
      const k = this.known.get(id);
      if (k && (k.inflight || now - k.at < FRESH_MS)) continue;
      this.known.delete(id); // re-inserted: the map's order is the age order pruned below
      this.known.set(id, { ...k, inflight: true, at: now });
      this.source
        .why('replica', id)
        .then((a) => {
          const d = a.history?.[0]?.decision;
          this.known.set(id, { at: Date.now(), text: d && d.action === 'pending' ? d.reasons[0] : undefined });
          this.onChange();
        })
        .catch(() => this.known.set(id, { at: Date.now() }));
    }
    for (const id of this.known.keys()) {
      if (this.known.size <= KEPT) break;
      this.known.delete(id);
    }
  }

  text(id) {
    return this.known.get(id)?.text;
  }
}
