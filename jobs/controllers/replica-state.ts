import { buildKey } from '../../core/keys.js';
import type { KeyValue, Store } from '../../db/store.js';
import { getFact, type Fact } from '../facts.js';

/** One replica of a service with every fact about it that the replica controller acts on. */
export interface ReplicaState {
  record: Fact<'replica'>;
  placement?: Fact<'placement'>;
  assignment?: Fact<'assigned'>;
  observation?: Fact<'observed'>;
  lost?: Fact<'lost'>;
  /** The node's registration (its create revision is the tenure), when it still exists. */
  node?: KeyValue;
  status?: Fact<'nodeStatus'>;
}

export async function readReplicaState(store: Store, record: Fact<'replica'>): Promise<ReplicaState> {
  const id = record.value.id;
  const placement = await getFact(store, 'placement', id);
  if (!placement) return { record };
  const n = placement.value.node;
  const [assignment, observation, lost, node, status] = await Promise.all([
    getFact(store, 'assigned', n, id),
    getFact(store, 'observed', n, id),
    getFact(store, 'lost', n, id),
    store.get(buildKey('node', n)),
    getFact(store, 'nodeStatus', n),
  ]);
  return {
    record,
    placement,
    ...(assignment ? { assignment } : {}),
    ...(observation ? { observation } : {}),
    ...(lost ? { lost } : {}),
    ...(node ? { node } : {}),
    ...(status ? { status } : {}),
  };
}

/**
 * Rule 5: an observation counts only under the node's current tenure, the replica's
 * current placement, and a ready node. Anything else may be a stale report from a
 * previous incarnation of the node and is ignored.
 */
export function admissibleObservation(s: ReplicaState): Fact<'observed'> | undefined {
  const { placement, assignment, observation, node, status } = s;
  if (!placement || !assignment || !observation || !node || !status) return undefined;
  const tenure = placement.value.tenure;
  const ok =
    assignment.value.tenure === tenure &&
    observation.value.tenure === tenure &&
    node.createRevision === tenure &&
    status.value.state === 'ready' &&
    status.value.tenure === tenure;
  return ok ? observation : undefined;
}

export function isLive(s: ReplicaState): boolean {
  return s.record.value.desired === 'run' && !s.record.value.retired;
}

/** Kept to count against the desired replicas: it ran to completion under a no-restart policy. */
export function isCompleted(s: ReplicaState): boolean {
  return s.record.value.retired && s.record.value.reason.startsWith('completed');
}

export function isRunning(s: ReplicaState): boolean {
  return admissibleObservation(s)?.value.state === 'running';
}
