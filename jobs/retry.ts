import type { Wakeup } from './controller.js';

/**
 * The controllers' one retry policy (pure: times on the step's clock). A step whose write
 * lost a race — a compare failed because another writer changed what it read — wrote
 * nothing and runs again soon to plan from the new state; the change that beat it usually
 * wakes it anyway, this is the floor. Waits on facts that wake no controller (an agent's
 * report of a stop that proves a stateful replica's fate) are polled. Crash-loop backoff
 * is not a retry of a step: it is kept in the store (controllers/backoff.ts).
 */
export const RETRY = {
  /** After a failed compare. */
  conflictMs: 100,
  /** Looking again for a proof that a stateful replica's old copy stopped (its node's report). */
  proofPollMs: 1_000,
} as const;

/** Run again soon: a write lost its race. */
export function retrySoon(now: number): Wakeup {
  return { at: now + RETRY.conflictMs };
}

/** The wakeup after committing writes of which `failed` lost their race: soon when any did, else none of its own. */
export function afterCommits(now: number, failed: number): Wakeup {
  return failed > 0 ? retrySoon(now) : {};
}
