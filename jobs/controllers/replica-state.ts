import { buildKey } from '../../core/keys.js';
import type { KeyValue, Store } from '../../db/store.js';
import { ranToCompletion } from '../../core/model/replica-outcome.js';
import { getFact, type Fact } from '../facts.js';
import { indexBy, listEvery } from './view.js';

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
 * Above this many replicas, reading every replica's facts one key at a time (six reads each)
 * costs more round trips than reading the six prefixes whole: a large service's step reads
 * the prefixes once and joins in memory.
 */
const BATCH_ABOVE = 32;

/** The states of many replicas (one service's), in the records' order. */
export async function readReplicaStates(store: Store, records: readonly Fact<'replica'>[]): Promise<ReplicaState[]> {
  if (records.length <= BATCH_ABOVE) {
    const out: ReplicaState[] = [];
    for (const r of records) out.push(await readReplicaState(store, r));
    return out;
  }
  const [placements, assigned, observed, lost, nodes, statuses] = await listEvery(store, 'placement', 'assigned', 'observed', 'lost', 'node', 'nodeStatus');
  const byKey = <T extends { key: string }>(xs: readonly T[]) => indexBy(xs, (x) => x.key);
  const [p, a, o, l, st] = [byKey(placements), byKey(assigned), byKey(observed), byKey(lost), byKey(statuses)];
  const n = new Map(nodes.map((f) => [f.key, f.kv]));
  return records.map((record) => {
    const id = record.value.id;
    const placement = p.get(buildKey('placement', id));
    if (!placement) return { record };
    const node = placement.value.node;
    const assignment = a.get(buildKey('assigned', node, id));
    const observation = o.get(buildKey('observed', node, id));
    const lostFact = l.get(buildKey('lost', node, id));
    const nodeKv = n.get(buildKey('node', node));
    const status = st.get(buildKey('nodeStatus', node));
    return {
      record,
      placement,
      ...(assignment ? { assignment } : {}),
      ...(observation ? { observation } : {}),
      ...(lostFact ? { lost: lostFact } : {}),
      ...(nodeKv ? { node: nodeKv } : {}),
      ...(status ? { status } : {}),
    };
  });
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
    // Unreachable is the quorum hold (docs/fencing.md): the tenure stands and its last report with it.
    (status.value.state === 'ready' || status.value.state === 'unreachable') &&
    status.value.tenure === tenure;
  return ok ? observation : undefined;
}

export function isLive(s: ReplicaState): boolean {
  return s.record.value.desired === 'run' && !s.record.value.retired;
}

/** Kept to count against the desired replicas: it ran to completion under a no-restart policy. */
export function isCompleted(s: ReplicaState): boolean {
  return ranToCompletion(s.record.value);
}

export function isRunning(s: ReplicaState): boolean {
  return admissibleObservation(s)?.value.state === 'running';
}
