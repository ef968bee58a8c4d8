import { makeDiagnostic } from '../../core/diagnostics/error.js';
import { buildKey } from '../../core/keys.js';
import type { LostReplica } from '../../core/model/facts.js';
import type { Compare, Store } from '../../db/store.js';
import { absent, getFact, putFact, sameTenure, unchanged, type Fact } from '../facts.js';
import { causedBy, causedByFact, decide, decisionKey, evidenceOf } from '../decisions/record.js';
import type { ClusterView } from './view.js';
import type { Write } from '../write.js';

const NODE_CONTROLLER = 'node';
const TERMINAL = new Set(['exited', 'failed', 'lost']);

/** What the node controller needs to decide a stateful replica's fate, read before the pure plan. */
export interface Proofs {
  fences: Map<string, Fact<'fence'>>;
  /** Per held replica: its node's latest observation of it. */
  observations: Map<string, Fact<'observed'>>;
  /** Hold decisions already written (their keys), so a hold is recorded once per node status. */
  holds: Set<string>;
}

/** A replica with a volume: moving it needs a proof that the old copy stopped. */
export function isStateful(a: Fact<'assigned'>): boolean {
  return a.value.spec.volumes.length > 0;
}

function holdKey(a: Fact<'assigned'>, status: Fact<'nodeStatus'> | undefined): string {
  return decisionKey('replica', a.value.replica, status?.value.since ?? a.value.placedAt, 'node-fence-wait');
}

export async function readProofs(store: Store, view: ClusterView, lost: Map<string, Fact<'lost'>>, fences: Map<string, Fact<'fence'>>): Promise<Proofs> {
  const proofs: Proofs = { fences, observations: new Map(), holds: new Set() };
  for (const [name, assigned] of view.byNode) {
    const tenure = view.nodes.get(name)?.kv.createRevision;
    for (const a of assigned) {
      if (a.value.tenure === tenure || a.value.desired !== 'run' || !isStateful(a) || lost.has(buildKey('lost', name, a.value.replica))) continue;
      const obs = await getFact(store, 'observed', name, a.value.replica);
      if (obs) proofs.observations.set(a.value.replica, obs);
      const key = holdKey(a, view.statuses.get(name));
      if (await store.get(key)) proofs.holds.add(key);
    }
  }
  return proofs;
}

type Proof = { proof: LostReplica['proof']; compares: Compare[]; evidence: Fact<'fence'> | Fact<'observed'>; reason: string };

/**
 * The proof that a stateful replica of a past tenure no longer runs, if there is one:
 * - node-confirmed: the node is registered and ready again under a newer tenure and its
 *   agent reports the replica stopped (exited, failed or gone) under that tenure — the agent
 *   re-adopted what its runtime holds before reporting, so "stopped" means it is not running there;
 * - operator-fence: `/fences/<node>` asserts every workload of tenures up to its own stopped.
 */
function proofOf(a: Fact<'assigned'>, proofs: Proofs, name: string, node: Fact<'node'> | undefined, status: Fact<'nodeStatus'> | undefined): Proof | undefined {
  const obs = proofs.observations.get(a.value.replica);
  // Only once the node is ready again under that tenure: the replacement then finds its
  // volume's node ready and goes back to its data (not to an empty volume elsewhere).
  const readyAgain = !!node && status?.value.state === 'ready' && status.value.tenure === node.kv.createRevision;
  if (node && readyAgain && obs && obs.value.tenure === node.kv.createRevision && obs.value.tenure > a.value.tenure && TERMINAL.has(obs.value.state)) {
    return {
      proof: 'node-confirmed',
      compares: [unchanged(obs), sameTenure(node.key, node.kv.createRevision), unchanged(status)],
      evidence: obs,
      reason: `node ${name} returned under tenure ${obs.value.tenure} and reports the replica ${obs.value.state}`,
    };
  }
  const fence = proofs.fences.get(name);
  if (fence && fence.value.tenure >= a.value.tenure) {
    return {
      proof: 'operator-fence',
      compares: [unchanged(fence)],
      evidence: fence,
      reason: `${fence.value.assertedBy} fenced node ${name} (tenures up to ${fence.value.tenure} stopped)`,
    };
  }
  return undefined;
}

/**
 * Stateful orphans of a node: each one with a proof is declared lost with it (the replica
 * controller then replaces it); each one without is held, with a decision saying what it
 * waits for, written once per node status. `waiting` asks for a poll: the agent's
 * confirmation arrives as an observation, which does not wake this controller.
 */
export function planStateful(
  orphans: readonly Fact<'assigned'>[],
  proofs: Proofs,
  name: string,
  node: Fact<'node'> | undefined,
  status: Fact<'nodeStatus'> | undefined,
  now: number,
): { txns: Write[]; waiting: boolean } {
  const txns: Write[] = [];
  let waiting = false;
  const statusKey = buildKey('nodeStatus', name);
  for (const a of orphans) {
    const replica = a.value.replica;
    const p = proofOf(a, proofs, name, node, status);
    if (p) {
      const d = decide({
        kind: 'replica',
        subject: replica,
        controller: NODE_CONTROLLER,
        action: `lost with node ${name} (proof: ${p.proof})`,
        tag: 'node-lost',
        at: now,
        evidence: [evidenceOf(a), evidenceOf(p.evidence), ...(status ? [evidenceOf(status)] : [])],
        cause: causedByFact(p.evidence),
        reasons: [p.reason, 'it has a volume: it is replaced only now that its stop is proven'],
      });
      const lostKey = buildKey('lost', name, replica);
      txns.push({
        compares: [unchanged(a), absent(lostKey), ...p.compares, ...d.compares],
        ops: [putFact('lost', [name, replica], { replica, service: a.value.service, node: name, tenure: a.value.tenure, at: now, proof: p.proof }), ...d.ops],
      });
      continue;
    }
    waiting = true;
    const key = holdKey(a, status);
    if (proofs.holds.has(key)) continue;
    const diag = makeDiagnostic('CCA-E0419', { replica, service: a.value.service, node: name, tenure: a.value.tenure });
    const at = status?.value.since ?? a.value.placedAt;
    const d = decide({
      kind: 'replica',
      subject: replica,
      controller: NODE_CONTROLLER,
      action: `held: waiting for fencing proof of node ${name}`,
      tag: 'node-fence-wait',
      at,
      evidence: [evidenceOf(a), ...(status ? [evidenceOf(status)] : [])],
      cause: status?.value.state === 'lost' ? causedBy(decisionKey('node', name, status.value.since, 'node-lost')) : causedByFact(node ?? { key: buildKey('node', name), modRevision: 0 }),
      reasons: [
        node ? `node ${name} returned under tenure ${node.kv.createRevision} but has not confirmed the stop of tenure ${a.value.tenure}'s replica` : `node ${name} lost tenure ${a.value.tenure}`,
        `${diag.code} ${diag.message}`,
      ],
    });
    txns.push({ compares: [unchanged(a), unchanged(status, statusKey), ...d.compares], ops: d.ops });
  }
  return { txns, waiting };
}
