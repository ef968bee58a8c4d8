import { router, stepKey, type Change, type Controller, type Route } from './controller.js';

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
  readonly fanouts = new Set<Controller>();

  private readonly routes: (change: Change) => Route[];

  constructor(readonly controllers: readonly Controller[]) {
    this.routes = router(controllers);
  }

  /** Every controller due now: global ones directly, keyed ones by fan-out (start-up, reconnect). */
  kickAll(now: number): void {
    for (const c of this.controllers) {
      if (c.subjectOf) this.fanouts.add(c);
      else this.wake(c, undefined, now);
    }
  }

  changed(changes: Iterable<Change>, now: number): void {
    for (const change of changes) {
      for (const r of this.routes(change)) {
        if (r.fanout) this.fanouts.add(r.controller);
        else this.wake(r.controller, r.subject, now);
      }
    }
  }

  /** Due at `at` (the earlier of this and any time already due; a running step is due again once it ends). */
  wake(controller: Controller, subject: string | undefined, at: number): void {
    const key = stepKey(controller.name, subject);
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
  }

  /** Steps due at or before `now` and not yet taken, by controller: how many, and since when the oldest. */
  waiting(now: number): { controller: string; waiting: number; oldestMs: number }[] {
    const by = new Map<string, { controller: string; waiting: number; oldestMs: number }>();
    for (const [key, e] of this.due) {
      if (e.at > now || this.running.has(key)) continue;
      const cur = by.get(e.controller.name) ?? { controller: e.controller.name, waiting: 0, oldestMs: 0 };
      cur.waiting++;
      cur.oldestMs = Math.max(cur.oldestMs, now - e.at);
      by.set(e.controller.name, cur);
    }
    return [...by.values()];
  }

  /** The earliest time a non-running step is due, or undefined. */
  nextAt(): number | undefined {
    let min: number | undefined;
    for (const [key, e] of this.due) if (!this.running.has(key) && (min === undefined || e.at < min)) min = e.at;
    return min;
  }
}
