import { buildKey } from '../../core/keys.js';
import type { KeyValue, Store } from '../../db/store.js';
import { ranToCompletion } from '../../core/model/replica-outcome.js';
import { getFact, type Fact } from '../facts.js';
import { chunks } from '../../core/chunks.js';
import { mapLimit } from '../../core/map-limit.js';
import { decodeMemo } from '../decode-memo.js';

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

/** Keys per `getMany` (the store's bound on one read, `limits.maxTxnOps`, as etcd's) and reads in flight at once. */
const KEYS_PER_READ = 128;
const READS_AT_ONCE = 4;

/** `store.getMany` over any number of keys: chunks within the store's bound, a few in flight. */
async function getEvery(store: Store, keys: readonly string[]): Promise<(KeyValue | null)[]> {
  return (await mapLimit(chunks(keys, KEYS_PER_READ), READS_AT_ONCE, (c) => store.getMany(c))).flat();
}

/**
 * The states of many replicas (one service's), in the records' order. Reads the keys of
 * these replicas only, never a whole prefix: a step of one service costs what the service
 * holds, not what the cluster holds (with S services, reading every node's placements and
 * reports per step made a round cost S × the cluster). Two passes of point reads — the
 * placements, then what each placement names (assignment, report, loss, its node's
 * registration and status) — each in reads of up to 128 keys.
 */
export async function readReplicaStates(store: Store, records: readonly Fact<'replica'>[]): Promise<ReplicaState[]> {
  const placementKvs = await getEvery(store, records.map((r) => buildKey('placement', r.value.id)));
  const placements = placementKvs.map((kv) => (kv ? decodeMemo.decodeKv('placement', kv) : undefined));
  // Per placed replica three keys (assignment, report, loss), then each node's two once.
  const keys: string[] = [];
  const nodeAt = new Map<string, number>();
  records.forEach((r, i) => {
    const p = placements[i];
    if (!p) return;
    keys.push(buildKey('assigned', p.node, r.value.id), buildKey('observed', p.node, r.value.id), buildKey('lost', p.node, r.value.id));
  });
  for (const p of placements) {
    if (!p || nodeAt.has(p.node)) continue;
    nodeAt.set(p.node, keys.length);
    keys.push(buildKey('node', p.node), buildKey('nodeStatus', p.node));
  }
  const kvs = await getEvery(store, keys);
  const factAt = <K extends 'assigned' | 'observed' | 'lost' | 'nodeStatus'>(kind: K, i: number): Fact<K> | undefined => {
    const kv = kvs[i];
    return kv ? { key: keys[i]!, kv, value: decodeMemo.decodeKv(kind, kv) } : undefined;
  };
  let at = 0; // the next placed replica's three keys
  return records.map((record, i): ReplicaState => {
    const kv = placementKvs[i];
    if (!kv) return { record };
    const placement: Fact<'placement'> = { key: kv.key, kv, value: placements[i]! };
    const n = nodeAt.get(placement.value.node)!;
    const [assignment, observation, lost] = [factAt('assigned', at), factAt('observed', at + 1), factAt('lost', at + 2)];
    at += 3;
    const node = kvs[n];
    const status = factAt('nodeStatus', n + 1);
    return {
      record,
      placement,
      ...(assignment ? { assignment } : {}),
      ...(observation ? { observation } : {}),
      ...(lost ? { lost } : {}),
      ...(node ? { node } : {}),
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
