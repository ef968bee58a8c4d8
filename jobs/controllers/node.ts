import { buildKey, prefixOf } from '../../core/keys.js';
import type { Compare, Op } from '../../db/store.js';
import { STEP_PRIORITY, type Controller, type StepContext, type Wakeup } from '../controller.js';
import { absent, deleteKey, getFact, listFacts, putFact, sameTenure, unchanged, type Fact } from '../facts.js';
import { absentEvidence, causedBy, causedByFact, decide, decisionKey, evidenceOf } from '../decisions/record.js';
import { isStateful, planStateful, readProofs, type Proofs } from './node-fencing.js';
import { commitEach, type Write } from '../write.js';
import { RETRY, retrySoon } from '../retry.js';
import { planQuorum, readRenewals, revokeExpired } from './node-quorum.js';
import { indexBy, readClusterView, type ClusterView } from './view.js';
import { QUORUM } from '../../core/model/quorum.js';

export const NODE_CONTROLLER = 'node';

export interface NodeControllerOptions {
  /** How long a lost node's replicas wait before they are declared lost and replaced. */
  lostGraceMs?: number;
}

/**
 * The node controller: a node's registration lives on its agent's lease. When the lease
 * expires (or the node re-registers under a new tenure) the node is marked lost; after a
 * short grace every replica assigned under the old tenure is marked lost, for the replica
 * controller to replace with new ids. Nothing moves back when the node returns: it is
 * marked ready under its new tenure and takes new placements only.
 *
 * A stateful replica (one with a volume) is the exception: a lease expiry is not proof that
 * it stopped (rule 7), so it is declared lost only with a proof — its node confirms the stop
 * under a new tenure, or an operator fences the node — and `lost.proof` says which
 * (node-fencing.ts).
 */
export function nodeController(opts: NodeControllerOptions = {}): Controller {
  const grace = opts.lostGraceMs ?? 1_000;
  return {
    name: NODE_CONTROLLER,
    priority: STEP_PRIORITY.node,
    watches: [prefixOf('node'), prefixOf('nodeStatus'), prefixOf('fence'), prefixOf('nodeOp'), prefixOf('membership')],
    // A placement never changes this plan (it is made under the node's current tenure, which a
    // change here would end); a release does: a lost record's end, a removed node's last replica.
    // Woken by each placement, a step read every node's lease at every scheduler commit.
    watchesDeletes: [prefixOf('assigned')],
    async reconcile(ctx: StepContext): Promise<Wakeup> {
      const { store, now } = ctx;
      const [view, lostList, fenceList, membership] = await Promise.all([readClusterView(store), listFacts(store, 'lost', prefixOf('lost')), listFacts(store, 'fence', prefixOf('fence')), getFact(store, 'membership', 'nodes')]);
      const lost = indexBy(lostList, (l) => l.key);
      const proofs = await readProofs(store, view, lost, indexBy(fenceList, (f) => f.value.node));
      // The quorum rule (docs/fencing.md): membership, lease expiry, the hold.
      const quorum = planQuorum(view, membership, await readRenewals(store, view), now);
      const txns: Write[] = [...quorum.txns];
      let timer: number | undefined = quorum.at;
      const names = new Set([...view.nodes.keys(), ...view.statuses.keys()]);
      for (const name of [...names].sort()) {
        const r = planNode(view, lost, proofs, name, now, grace);
        txns.push(...(r.txns ?? []));
        if (r.at !== undefined) timer = Math.min(timer ?? Infinity, r.at);
      }
      // A lost record has done its job once the scheduler released the assignment.
      for (const l of lostList) {
        if (!view.assignments.has(l.value.replica) || view.assignments.get(l.value.replica)!.value.node !== l.value.node) {
          txns.push({ compares: [unchanged(l), absent(buildKey('assigned', l.value.node, l.value.replica))], ops: [deleteKey(l.key)] });
        }
      }
      const failed = await commitEach(store, txns);
      if (quorum.txns.length > 0 || failed > 0) await revokeExpired(store, await readClusterView(store));
      if (failed > 0) return retrySoon(now);
      return timer !== undefined ? { at: timer } : {};
    },
  };
}

/** A node's registration and status as read, with the compare that its tenure is unchanged. */
function nodeFacts(view: ClusterView, name: string) {
  const node = view.nodes.get(name);
  const nodeKey = buildKey('node', name);
  return {
    node,
    status: view.statuses.get(name),
    tenure: node?.kv.createRevision,
    nodeKey,
    nodeCompare: node ? sameTenure(nodeKey, node.kv.createRevision) : absent(nodeKey),
    statusKey: buildKey('nodeStatus', name),
  };
}

function planNode(view: ClusterView, lost: Map<string, Fact<'lost'>>, proofs: Proofs, name: string, now: number, grace: number): { txns?: Write[]; at?: number } {
  const { node, status, tenure, nodeKey, nodeCompare } = nodeFacts(view, name);

  if (status && (status.value.state === 'ready' || status.value.state === 'unreachable') && status.value.tenure !== tenure) {
    const reason = node ? `re-registered under tenure ${tenure}; tenure ${status.value.tenure} ended` : `the registration lease of tenure ${status.value.tenure} expired`;
    const d = decide({
      kind: 'node',
      subject: name,
      controller: NODE_CONTROLLER,
      action: 'lost',
      tag: 'node-lost',
      at: now,
      evidence: [evidenceOf(status), node ? evidenceOf(node) : absentEvidence(nodeKey)],
      cause: causedBy(decisionKey('node', name, status.value.since, 'node-ready')),
      reasons: [reason, `its replicas are declared lost after ${grace} ms unless it returns`],
    });
    return {
      txns: [{
        compares: [unchanged(status), nodeCompare, ...d.compares],
        ops: [putFact('nodeStatus', [name], { node: name, tenure: status.value.tenure, state: 'lost', since: now, reason }), ...d.ops],
      }],
    };
  }

  // Assignments from a tenure that is not the node's current one, not yet declared lost.
  const allOrphans = (view.byNode.get(name) ?? []).filter((a) => a.value.tenure !== tenure && !lost.has(buildKey('lost', name, a.value.replica)) && a.value.desired === 'run');
  // Stateful ones (with a volume) wait for a proof of the stop, however long; they do not
  // hold up the rest of the node (its stateless replicas, its readiness when it returns).
  const stateful = allOrphans.filter(isStateful);
  const orphans = allOrphans.filter((a) => !isStateful(a));
  const held = planStateful(stateful, proofs, name, node, status, now);
  if (held.txns.length > 0) return { txns: held.txns, at: now };
  const removed = removal(view, name);
  const r = planLiveNode(view, orphans, name, now, removed ? 0 : grace);
  // The grace was skipped on the operator's word: that word is part of the read set.
  if (removed) for (const t of r.txns ?? []) t.compares.push(unchanged(removed));
  if (!r.txns && !r.at && !held.waiting) {
    const forget = planForget(view, name, now);
    if (forget) return { txns: [forget] };
  }
  return held.waiting ? { ...r, at: Math.min(r.at ?? Infinity, now + RETRY.proofPollMs) } : r;
}

/** The stateless orphans of a node past its grace, then its readiness under a new tenure. */
function planLiveNode(view: ClusterView, orphans: Fact<'assigned'>[], name: string, now: number, grace: number): { txns?: Write[]; at?: number } {
  const { node, status, tenure, nodeKey, nodeCompare, statusKey } = nodeFacts(view, name);
  if (orphans.length > 0) {
    const lostSince = status?.value.state === 'lost' ? status.value.since : undefined;
    // Expired by this controller: an agent may run F + check + kill past the expiry (docs/fencing.md).
    if (status?.value.expired) grace = Math.max(grace, QUORUM.lostGraceMs);
    if (lostSince !== undefined && now < lostSince + grace) return { at: lostSince + grace };
    const cause = status?.value.state === 'lost' ? causedBy(decisionKey('node', name, status.value.since, 'node-lost')) : causedByFact({ key: nodeKey, ...(node ? { kv: node.kv } : { modRevision: 0 }) });
    const compares: Compare[] = [unchanged(status, statusKey), nodeCompare];
    const ops: Op[] = [];
    for (const a of orphans.slice(0, 40)) {
      const d = decide({
        kind: 'replica',
        subject: a.value.replica,
        controller: NODE_CONTROLLER,
        action: `lost with node ${name}`,
        tag: 'node-lost',
        at: now,
        evidence: [evidenceOf(a), ...(status ? [evidenceOf(status)] : [])],
        cause,
        reasons: [`node ${name} lost tenure ${a.value.tenure} and did not return within ${grace} ms`],
      });
      const lostKey = buildKey('lost', name, a.value.replica);
      compares.push(unchanged(a), absent(lostKey), ...d.compares);
      ops.push(putFact('lost', [name, a.value.replica], { replica: a.value.replica, service: a.value.service, node: name, tenure: a.value.tenure, at: now, proof: 'lease-expired' }), ...d.ops);
    }
    return { txns: [{ compares, ops }], ...(orphans.length > 40 ? { at: now } : {}) };
  }

  // Expired by this controller, its lease being revoked (node-quorum.ts revokeExpired): never ready again under that tenure.
  if (node && status?.value.state === 'lost' && status.value.expired && status.value.tenure === tenure) return {};
  // Unreachable under its tenure: the quorum rule (node-quorum.ts) says when it is ready again.
  if (node && status?.value.state === 'unreachable' && status.value.tenure === tenure) return {};
  if (node && (!status || status.value.tenure !== tenure || status.value.state !== 'ready')) {
    const d = decide({
      kind: 'node',
      subject: name,
      controller: NODE_CONTROLLER,
      action: 'ready',
      tag: 'node-ready',
      at: now,
      evidence: [evidenceOf(node), ...(status ? [evidenceOf(status)] : [])],
      cause: causedByFact(node),
      reasons: [`registered in zone ${node.value.zone} with ${node.value.capacity.cpuMillis}m cpu under tenure ${tenure}`],
    });
    return {
      txns: [{
        compares: [unchanged(node), unchanged(status, statusKey), ...d.compares],
        ops: [putFact('nodeStatus', [name], { node: name, tenure: tenure!, state: 'ready', since: now, reason: 'registered' }), ...d.ops],
      }],
    };
  }
  return {};
}

/** An operator's removal that applies: the node is not registered and was at most the tenure removed. */
function removal(view: ClusterView, name: string): Fact<'nodeOp'> | undefined {
  const op = view.nodeOps.get(name);
  const status = view.statuses.get(name);
  if (!op || op.value.removeTenure === 0 || view.nodes.has(name)) return undefined;
  return !status || status.value.tenure <= op.value.removeTenure ? op : undefined;
}

/**
 * `cca node remove`: a removed node whose replicas are all gone (declared lost at once, no
 * grace: the operator said it is gone; stateful ones still wait for a fence) is forgotten:
 * its status goes, with a decision citing the operator's request.
 */
function planForget(view: ClusterView, name: string, now: number): Write | undefined {
  const op = removal(view, name);
  const status = view.statuses.get(name);
  if (!op || !status || (view.byNode.get(name) ?? []).length > 0) return undefined;
  const d = decide({
    kind: 'node',
    subject: name,
    controller: NODE_CONTROLLER,
    action: 'removed',
    tag: 'node-removed',
    at: now,
    evidence: [evidenceOf(op), evidenceOf(status), absentEvidence(buildKey('node', name))],
    cause: causedByFact(op),
    reasons: [`${op.value.requestedBy} removed node ${name} (tenure ${op.value.removeTenure}); it is not registered and holds no assignments`],
  });
  return {
    compares: [unchanged(op), unchanged(status), absent(buildKey('node', name)), ...d.compares],
    ops: [deleteKey(status.key), ...d.ops],
  };
}
