// Rolling updates over time, kept in the browser for the session: each write of the rollout
// controller's record (`/rollouts/<service>`, whose counts it keeps current) is a sample of
// old/new/ready counts. A new roll (another target revision) starts a new series.
import { decodeFact, parseKey } from '/src/core/keys.js';
import { Ring } from './ring.js';

export const MAX_SAMPLES = 500;

export class RolloutLog {
  constructor() {
    /** service → { toRevision, samples: Ring of { t, state, desired, newReady, newLive, oldLive } } */
    this.rolls = new Map();
  }

  ingest(batch, at) {
    if (batch.reset) {
      this.rolls.clear();
      return true;
    }
    let changed = false;
    for (const ev of batch.events) {
      if (parseKey(ev.kv.key)?.kind !== 'rollout') continue;
      const service = parseKey(ev.kv.key).params.service;
      if (ev.type === 'delete') {
        changed = this.rolls.delete(service) || changed;
        continue;
      }
      const r = decodeFact('rollout', ev.kv.key, ev.kv.value);
      let roll = this.rolls.get(service);
      if (!roll || roll.toRevision !== r.toRevision) this.rolls.set(service, (roll = { toRevision: r.toRevision, samples: new Ring(MAX_SAMPLES) }));
      // The first sample of a roll listed mid-way is when it started; later ones when they were seen.
      const t = roll.samples.length === 0 && batch.listing ? r.startedAt : Math.max(at, r.startedAt);
      roll.samples.push({ t, state: r.state, desired: r.desired, newReady: r.newReady, newLive: r.newLive, oldLive: r.oldLive });
      changed = true;
    }
    return changed;
  }
}
