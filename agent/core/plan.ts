import type { Assignment, Observation } from '../../core/model/index.js';
import { FENCE } from './fence.js';

/**
 * What the agent should do, decided without I/O from what it knows: the slots it holds, the
 * assignments it last saw, its tenure and whether it is fenced. The agent shell executes the
 * actions; this function is the whole policy, and test/agent/units.test.ts checks it.
 */
export interface SlotView {
  replica: string;
  state: Observation['state'];
  hasHandle: boolean;
  held: boolean;
  /** Stopped by a fence (forgotten once exited, so it may start again). */
  fenced: boolean;
  stopGraceMs?: number;
}

export type Action =
  | { kind: 'stop'; replica: string; graceMs: number }
  | { kind: 'forget'; replica: string }
  | { kind: 'start'; assignment: Assignment };

const TERMINAL = new Set<Observation['state']>(['exited', 'failed', 'lost']);
const LIVE = new Set<Observation['state']>(['pending', 'pulling', 'init', 'starting', 'running']);

export function plan(slots: readonly SlotView[], desired: readonly Assignment[], tenure: number | undefined, fenced: boolean): Action[] {
  const byReplica = new Map(desired.map((a) => [a.replica, a]));
  const runnable = (a: Assignment | undefined): boolean => a !== undefined && a.desired === 'run' && a.tenure === tenure && !fenced;
  const actions: Action[] = [];
  const held = new Set<string>();
  for (const s of slots) {
    held.add(s.replica);
    const a = byReplica.get(s.replica);
    if (runnable(a)) {
      // Stopped by a fence that has lifted since: forget it so it starts afresh.
      if (s.fenced && TERMINAL.has(s.state)) actions.push({ kind: 'forget', replica: s.replica });
      continue;
    }
    const ours = a !== undefined && a.tenure === tenure;
    if (s.hasHandle && LIVE.has(s.state)) {
      // Fenced, or placed under a tenure that is not ours (any more): it may already run
      // elsewhere, so it gets the fence's kill budget rather than its full grace.
      const grace = s.stopGraceMs ?? FENCE.killMs;
      actions.push({ kind: 'stop', replica: s.replica, graceMs: fenced || (a !== undefined && !ours) ? Math.min(grace, FENCE.killMs) : grace });
    } else if (s.state !== 'stopping' && !(ours && !s.fenced)) {
      // Keep reporting a terminal state while the assignment stays; forget it afterwards.
      actions.push({ kind: 'forget', replica: s.replica });
    }
  }
  if (fenced) return actions;
  for (const a of desired) {
    if (!runnable(a)) continue;
    const s = slots.find((x) => x.replica === a.replica);
    if (!held.has(a.replica) || (s && !s.hasHandle && !s.held && !TERMINAL.has(s.state))) actions.push({ kind: 'start', assignment: a });
  }
  return actions;
}
