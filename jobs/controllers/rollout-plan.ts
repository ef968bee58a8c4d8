import { resolveCountOrPercent } from '../../core/model/resolve.js';
import type { ServiceSpec } from '../../core/model/service.js';

/**
 * The arithmetic of a rolling update, pure: how many new-template replicas to create and
 * old-template ones to stop this step, from counts. It is Kubernetes' Deployment rule
 * applied to individual replicas:
 *
 * - surge (`max_surge`, a percentage of desired rounded up) caps live replicas at
 *   desired + surge; new ones are created only up to that cap and never beyond desired;
 * - unavailable (`max_unavailable`, rounded down) sets the floor: an old replica that is
 *   ready is stopped only while ready replicas (old and new) stay ≥ desired − unavailable
 *   after the stop;
 * - old replicas that are not ready are stopped first (they hold no availability), but no
 *   more than the room left once the new replicas still becoming ready are counted as
 *   missing (Kubernetes' `maxScaledDown`), so a roll does not discard old capacity that
 *   might yet come up while its replacement has not;
 * - both resolving to zero (e.g. surge "0%" and unavailable "25%" of 3) would leave no room
 *   to move: unavailable is lifted to 1 then, as Kubernetes does. Both written as zero is a
 *   validation error (CCA-E0318).
 *
 * A paused roll (stuck past its deadline) stops nothing and creates only what brings the
 * live replicas back up to desired (old ones lost with a node: the spec's template is the
 * only one a new replica can have), never a surge.
 */
export interface RollCounts {
  /** Replicas wanted live (desired minus those that ran to completion). */
  desired: number;
  newLive: number;
  newReady: number;
  oldLive: number;
  oldReady: number;
  /**
   * Replicas told to stop that have not stopped yet, counted against `maxLive` (only for a
   * stateful service: its replacement must not start until the old copy let go of its node).
   */
  stopping?: number;
}

export interface RollBounds {
  surge: number;
  unavailable: number;
  /** desired − unavailable (not below zero): the ready count a voluntary stop never goes under. */
  minReady: number;
  /** desired + surge: the live count creation never goes over. */
  maxLive: number;
}

export interface RollPlan extends RollBounds {
  create: number;
  /** Old replicas that are not ready, to stop (they hold no availability). */
  stopUnready: number;
  /** Old replicas that are ready, to stop (each keeps ready ≥ minReady). */
  stopReady: number;
}

/**
 * A stateful service (one with volumes) rolls without surge: its data lives on one node, so a
 * surged copy would start elsewhere on an empty volume while the old one still writes. It
 * stops an old replica first and its replacement goes back to the node holding the volume.
 */
export function rollBounds(update: Pick<ServiceSpec['update'], 'maxSurge' | 'maxUnavailable'>, desired: number, stateful = false): RollBounds {
  const surge = stateful ? 0 : resolveCountOrPercent(update.maxSurge, desired, 'up');
  let unavailable = resolveCountOrPercent(update.maxUnavailable, desired, 'down');
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable, minReady: Math.max(0, desired - unavailable), maxLive: desired + surge };
}

export function planRoll(c: RollCounts, bounds: RollBounds, paused: boolean): RollPlan {
  const none = { ...bounds, create: 0, stopUnready: 0, stopReady: 0 };
  if (c.oldLive === 0) return none;
  const total = c.newLive + c.oldLive;
  if (paused) return { ...none, create: Math.max(0, Math.min(c.desired - c.newLive, c.desired - total)) };
  const create = Math.max(0, Math.min(c.desired - c.newLive, bounds.maxLive - total - (c.stopping ?? 0)));
  const newUnready = Math.max(0, c.newLive - c.newReady);
  const room = Math.max(0, total - bounds.minReady - newUnready);
  const stopUnready = Math.min(c.oldLive - c.oldReady, room);
  const ready = c.newReady + c.oldReady;
  const stopReady = Math.max(0, Math.min(c.oldReady, room - stopUnready, ready - bounds.minReady));
  return { ...bounds, create, stopUnready, stopReady };
}
