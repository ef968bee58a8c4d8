import { buildKey } from '../../../core/keys.js';
import type { Allocation } from '../../../core/model/facts.js';
import { replicaReason } from '../../../core/model/replica-outcome.js';
import type { Compare, Op } from '../../../db/store.js';
import { absent, deleteKey, putFact, unchanged, type Fact } from '../../facts.js';
import { causedBy, causedByFact, decide, decisionKey, evidenceOf, type Cause } from '../../decisions/record.js';
import { addResources, noResources } from '../../placement/quantities.js';
import type { ClusterView } from '../view.js';
import { SCHEDULER } from './plan-placements.js';
import type { Write } from '../../write.js';

/** The replica controller's stop decision, which every release and stop order cites. */
export function stopCause(record: Fact<'replica'> | undefined, replicaKey: string): Cause {
  if (!record) return causedByFact({ key: replicaKey, modRevision: 0 });
  return causedBy(decisionKey('replica', record.value.id, record.value.stopRequestedAt ?? record.value.createdAt, 'rc-stop'));
}

/**
 * Releases and stop orders, per node: an assignment whose replica is retired or gone is
 * deleted with its placement, and the node's allocation shrinks in the same txn; a replica
 * asked to stop gets `desired: stop` on its assignment so the agent stops it.
 */
export function planReleases(view: ClusterView, records: Map<string, Fact<'replica'>>, placements: Map<string, Fact<'placement'>>, now: number) {
  const groups = new Map<string, Write>();
  for (const [node, assigned] of view.byNode) {
    const compares: Compare[] = [];
    const ops: Op[] = [];
    let used = view.allocations.get(node)?.value.used ?? noResources;
    let replicas = new Set(view.allocations.get(node)?.value.replicas ?? []);
    let released = 0;
    for (const a of assigned) {
      const id = a.value.replica;
      const rec = records.get(id);
      const replicaKey = buildKey('replica', a.value.service, id);
      const gone = !rec || rec.value.retired;
      const stopping = !gone && rec!.value.desired === 'stop' && a.value.desired === 'run';
      if (!gone && !stopping) continue;
      const d = decide({
        kind: 'replica',
        subject: id,
        controller: SCHEDULER,
        action: gone ? `released from ${node}` : `asked ${node} to stop it`,
        tag: gone ? 'sched-release' : 'sched-stop',
        at: now,
        evidence: [evidenceOf(a), ...(rec ? [evidenceOf(rec)] : [])],
        cause: stopCause(rec, replicaKey),
        reasons: gone
          ? [rec ? `the replica is retired (${replicaReason(rec.value) || 'stopped'})` : 'the replica record is gone', `frees ${a.value.resources.cpuMillis}m cpu on ${node}`]
          : [`the replica is to stop within ${a.value.spec.stopGraceMs} ms`],
      });
      compares.push(unchanged(a), unchanged(rec, replicaKey), ...d.compares);
      ops.push(...d.ops);
      if (gone) {
        const placement = placements.get(id);
        ops.push(deleteKey(a.key));
        if (placement && placement.value.node === node) {
          compares.push(unchanged(placement));
          ops.push(deleteKey(placement.key));
        }
        used = addResources(used, a.value.resources, -1);
        replicas.delete(id);
        released++;
      } else {
        ops.push(putFact('assigned', [node, id], { ...a.value, desired: 'stop' }));
      }
    }
    if (ops.length === 0) continue;
    if (released > 0) {
      const alloc = view.allocations.get(node);
      const tenure = alloc?.value.tenure ?? 0;
      const next: Allocation = {
        node,
        tenure,
        used: { cpuMillis: Math.max(0, used.cpuMillis), memoryBytes: Math.max(0, used.memoryBytes) },
        replicas: [...replicas].sort(),
      };
      compares.push(unchanged(alloc, buildKey('allocation', node)));
      ops.push(putFact('allocation', [node], next));
    }
    groups.set(node, { compares, ops });
  }
  return groups;
}

/**
 * An operator's repair request for a node with an open finding: the scheduler rebuilds the
 * allocation from the assignments it just read (the repair is a decision of its own).
 */
export function planRepairs(view: ClusterView, repairs: Fact<'repair'>[], now: number) {
  const groups = new Map<string, Write>();
  for (const r of repairs) {
    const node = r.value.node;
    const audit = view.audits.get(node);
    if (!audit?.value.open || audit.value.revision !== r.value.finding) continue;
    const assigned = view.byNode.get(node) ?? [];
    const used = assigned.reduce((s, a) => addResources(s, a.value.resources), noResources);
    const alloc = view.allocations.get(node);
    const next: Allocation = {
      node,
      tenure: view.nodes.get(node)?.kv.createRevision ?? alloc?.value.tenure ?? 0,
      used,
      replicas: assigned.map((a) => a.value.replica).sort(),
    };
    const d = decide({
      kind: 'node',
      subject: node,
      controller: SCHEDULER,
      action: 'repaired allocation',
      tag: 'sched-repair',
      at: now,
      evidence: [evidenceOf(r), evidenceOf(audit), ...(alloc ? [evidenceOf(alloc)] : []), ...assigned.slice(0, 32).map(evidenceOf)],
      cause: causedByFact(r),
      reasons: [`${r.value.requestedBy} asked to repair the finding at revision ${r.value.finding}`, `rebuilt from ${assigned.length} assignment(s): ${used.cpuMillis}m cpu, ${used.memoryBytes} bytes`],
    });
    groups.set(node, {
      compares: [unchanged(r), unchanged(audit), unchanged(alloc, buildKey('allocation', node)), ...assigned.map((a) => unchanged(a)), ...d.compares],
      ops: [putFact('allocation', [node], next), ...d.ops],
    });
  }
  return groups;
}

/**
 * `cca node remove`: the allocation of a removed node (not registered, every assignment
 * released) is deleted with a decision, so nothing of the node is left in the scheduler's keys.
 */
export function planForgetAllocations(view: ClusterView, now: number) {
  const groups = new Map<string, Write>();
  for (const [node, op] of view.nodeOps) {
    const alloc = view.allocations.get(node);
    if (op.value.removeTenure === 0 || !alloc || view.nodes.has(node) || (view.byNode.get(node) ?? []).length > 0) continue;
    if (alloc.value.tenure > op.value.removeTenure) continue; // a later tenure than the one removed
    const d = decide({
      kind: 'node',
      subject: node,
      controller: SCHEDULER,
      action: 'forgot allocation',
      tag: 'sched-forget',
      at: now,
      evidence: [evidenceOf(op), evidenceOf(alloc)],
      cause: causedByFact(op),
      reasons: [`node ${node} was removed by ${op.value.requestedBy} and holds no assignment`],
    });
    groups.set(node, {
      compares: [unchanged(op), unchanged(alloc), absent(buildKey('node', node)), ...d.compares],
      ops: [deleteKey(alloc.key), ...d.ops],
    });
  }
  return groups;
}
