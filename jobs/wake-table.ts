import { stepKey, wakesOn, type Controller } from './controller.js';

export interface DueStep {
  controller: Controller;
  subject: string | undefined;
  key: string;
}

interface Entry extends DueStep {
  at: number;
}

/**
 * Which (controller, subject) steps are due and when: the routing both the in-process
 * driver and the simulation use, so they wake steps exactly alike. Pure bookkeeping — no
 * clock, no store: callers pass times and changed keys in, and resolve fan-outs (a change
 * that concerns every subject of a keyed controller) with the controller's `subjects()`.
 */
export class WakeTable {
  private due = new Map<string, Entry>();
  private running = new Set<string>();
  /** Changed while running: due again as soon as the running step ends. */
  private dirty = new Set<string>();
  readonly fanouts = new Set<Controller>();

  constructor(readonly controllers: readonly Controller[]) {}

  /** Every controller due now: global ones directly, keyed ones by fan-out (start-up, reconnect). */
  kickAll(now: number): void {
    for (const c of this.controllers) {
      if (c.subjectOf) this.fanouts.add(c);
      else this.wake(c, undefined, now);
    }
  }

  changed(keys: Iterable<string>, now: number): void {
    for (const key of keys) {
      for (const c of this.controllers) {
        if (!wakesOn(c.watches, key)) continue;
        if (!c.subjectOf) this.wake(c, undefined, now);
        else {
          const subject = c.subjectOf(key);
          if (subject === undefined) this.fanouts.add(c);
          else this.wake(c, subject, now);
        }
      }
    }
  }

  /** Due at `at` (the earlier of this and any time already due). */
  wake(controller: Controller, subject: string | undefined, at: number): void {
    const key = stepKey(controller.name, subject);
    if (this.running.has(key) && at <= Number.MAX_SAFE_INTEGER) {
      const cur = this.due.get(key);
      if (!cur || at < cur.at) this.due.set(key, { controller, subject, key, at });
      this.dirty.add(key);
      return;
    }
    const cur = this.due.get(key);
    if (!cur || at < cur.at) this.due.set(key, { controller, subject, key, at });
  }

  /** Steps due at or before `now` that are not running, marked running. */
  take(now: number): DueStep[] {
    const out: DueStep[] = [];
    for (const [key, e] of [...this.due]) {
      if (e.at > now || this.running.has(key)) continue;
      this.due.delete(key);
      this.running.add(key);
      out.push({ controller: e.controller, subject: e.subject, key });
    }
    return out;
  }

  done(step: DueStep): void {
    this.running.delete(step.key);
    this.dirty.delete(step.key);
  }

  /** The earliest time a non-running step is due, or undefined. */
  nextAt(): number | undefined {
    let min: number | undefined;
    for (const [key, e] of this.due) if (!this.running.has(key) && (min === undefined || e.at < min)) min = e.at;
    return min;
  }

  runningCount(): number {
    return this.running.size;
  }

  pending(): number {
    return this.due.size + this.fanouts.size;
  }
}
