import { runsTemplate, templateHash } from '../../core/model/template.js';
import { admissibleObservation, isLive, type ReplicaState } from './replica-state.js';

/**
 * The template a replica runs, for reports (which template a roll comes from): the hash
 * of the spec its assignment carries when placed, else the one recorded at creation;
 * undefined for an unplaced replica from before templates were recorded. Whether a replica
 * is current is `runsTemplate`, which hashes only when the record does not match.
 */
export function templateOfReplica(s: ReplicaState): string | undefined {
  if (s.assignment) return templateHash(s.assignment.value.spec);
  return s.record.value.template || undefined;
}

/**
 * Ready, for a roll's availability bound: live, running under an admissible observation
 * (current tenure, current placement, ready node) and, when its spec has a readiness check,
 * passing it. The same rule as endpoints and `cca get services`.
 */
export function isReadyReplica(s: ReplicaState): boolean {
  if (!isLive(s) || s.lost) return false;
  const obs = admissibleObservation(s);
  if (!obs || obs.value.state !== 'running') return false;
  const checked = s.assignment?.value.spec.health.readiness !== undefined;
  return !checked || obs.value.health.readiness === 'passing';
}

/** Live replicas split by template: those the spec wants now (new), and the rest (old). */
export function splitByTemplate(states: readonly ReplicaState[], target: string): { fresh: ReplicaState[]; old: ReplicaState[] } {
  const fresh: ReplicaState[] = [];
  const old: ReplicaState[] = [];
  for (const s of states) {
    if (!isLive(s)) continue;
    if (runsTemplate(s.record.value.template, s.assignment?.value.spec, target)) fresh.push(s);
    else old.push(s);
  }
  return { fresh, old };
}
