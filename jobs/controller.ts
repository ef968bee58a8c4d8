import type { Store } from '../db/store.js';
import { changesOfEvents, type StoreChange } from '../db/changes.js';

/**
 * The step contract. A controller is `reconcile(ctx) → Wakeup`: it reads the store,
 * decides what is due, writes each action with its decision record in one store txn
 * whose compares cover every key that justified it (the read-set rule), and says when
 * it should run next. It never blocks, keeps no state between steps, and reads time and
 * randomness only from its context — so the same step runs as a graphile-worker job,
 * in the in-process driver, in the simulation, and in the browser.
 */
export interface StepContext {
  store: Store;
  /** Milliseconds on the driver's clock (virtual in the simulation). */
  now: number;
  /** Uniform in [0, 1); seeded in the simulation. */
  random(): number;
  /** The subject of a keyed controller's job (e.g. a service name); undefined for global ones. */
  subject?: string;
}

/**
 * When to run again besides on change: `at` a time on the driver's clock. Changes wake a
 * controller through its static `watches` (and `subjectOf`), which every driver —
 * in-process, graphile-worker, simulation — can route without asking the step.
 */
export interface Wakeup {
  at?: number;
}

export interface Controller {
  /** Stable, used in job keys, metrics and decision records. */
  readonly name: string;
  /** Prefixes whose changes always wake this controller. */
  readonly watches: readonly string[];
  /**
   * Prefixes where only a deletion wakes it: its plan depends on what goes away there, never
   * on what is added or updated (the node controller and the scheduler's placements).
   */
  readonly watchesDeletes?: readonly string[];
  /**
   * For controllers split by subject (several pods work in parallel on different
   * subjects): the subject a changed key belongs to, or undefined when the change
   * concerns every subject (then each known subject runs; see `subjects`).
   */
  subjectOf?(key: string): string | undefined;
  /**
   * A change under its watches that no step of this controller acts on, judged on the values
   * the change carries (`Change.before`/`after`; a change without both always wakes it). It
   * must hold for every decision the controller makes: a passed-over change is one no step
   * would have written anything for.
   */
  ignores?(change: Change): boolean;
  /**
   * Which due step a busy worker pool takes first (graphile-worker's job priority: lower
   * first, then oldest; STEP_PRIORITY): node judgements, and making and placing replicas, go
   * ahead of what follows a running replica, so a burst of per-service work (100 services'
   * reports) does not hold them back for tens of seconds. Omitted: 0. The in-process driver
   * runs every due step at once, so there it changes nothing.
   */
  readonly priority?: number;
  /** Every subject that currently needs a step (e.g. every service name). */
  subjects?(store: Store): Promise<string[]>;
  reconcile(ctx: StepContext): Promise<Wakeup>;
}

/**
 * Job priorities (Controller.priority; lower runs first on a busy worker pool): lease expiry,
 * then node judgements, then what makes and places replicas (the replica controller and the
 * scheduler, oldest first between them), then everything downstream of a running replica
 * (endpoints, rollouts, network, …) at 0.
 */
export const STEP_PRIORITY = { leases: -3, node: -2, scheduler: -1, replica: -1 } as const;

/** The job key of one controller step: one pending run per controller and subject. */
export function stepKey(controller: string, subject: string | undefined): string {
  return subject === undefined ? controller : `${controller}:${subject}`;
}

/**
 * One committed change as the drivers route it: its key, whether it was a deletion, and its
 * values before and after when the driver knows both (what `ignores` judges).
 */
export type Change = StoreChange;
export { changesOfEvents };

/** Does this change concern a controller with these watches? */
export function wakesOn(c: Pick<Controller, 'watches' | 'watchesDeletes'>, change: Change): boolean {
  for (const p of c.watches) if (change.key.startsWith(p)) return true;
  if (change.deleted && c.watchesDeletes) for (const p of c.watchesDeletes) if (change.key.startsWith(p)) return true;
  return false;
}

/**
 * One step a changed key calls for: a (controller, subject) step, or — when a keyed
 * controller cannot tell which subject a change concerns — a fan-out to all its subjects.
 */
export type Route = { controller: Controller; fanout: false; subject: string | undefined } | { controller: Controller; fanout: true };

/**
 * The steps a change wakes, in controller order. The one routing every driver uses:
 * the in-process driver's and the simulation's wake table, and graphile-worker's commit hook
 * (those two through `router`, which asks fewer controllers and answers the same).
 */
export function route(controllers: readonly Controller[], change: Change): Route[] {
  const out: Route[] = [];
  for (const controller of controllers) {
    if (!wakesOn(controller, change)) continue;
    if (controller.ignores && change.before !== undefined && change.after !== undefined && controller.ignores(change)) continue;
    const subject = controller.subjectOf?.(change.key);
    out.push(controller.subjectOf && subject === undefined ? { controller, fanout: true } : { controller, fanout: false, subject });
  }
  return out;
}

/**
 * `route` for one list of controllers, asking only those whose watches can match a key's
 * first path segment: a commit of thousands of keys (a scheduler step's placements) asked
 * every controller about every key. The same answers as `route`; the candidates of each
 * segment are worked out once, for at most ROUTER_SEGMENTS segments (the key space has a
 * few dozen; past that, a key is routed the long way).
 */
export function router(controllers: readonly Controller[]): (change: Change) => Route[] {
  const bySegment = new Map<string, readonly Controller[]>();
  const candidates = (key: string): readonly Controller[] => {
    const end = key.indexOf('/', 1);
    if (end < 0) return controllers;
    const segment = key.slice(0, end + 1);
    let list = bySegment.get(segment);
    if (list === undefined) {
      const overlaps = (p: string) => p.startsWith(segment) || segment.startsWith(p);
      list = controllers.filter((c) => c.watches.some(overlaps) || (c.watchesDeletes ?? []).some(overlaps));
      if (bySegment.size < ROUTER_SEGMENTS) bySegment.set(segment, list);
    }
    return list;
  };
  return (change) => route(candidates(change.key), change);
}

/** First path segments a router remembers the candidates of. */
export const ROUTER_SEGMENTS = 256;
