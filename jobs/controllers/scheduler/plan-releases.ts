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
import { MAX_OPS } from './batch.js';

/**
 * Assignments one repair step compares (one txn, with the request, the finding, the
 * allocation and the decision): a node holding more is repaired in chunks across steps.
 */
export const REPAIR_CHUNK = 100;
/** Room a node's release group keeps for its allocation's compare and put. */
const ALLOCATION_OPS = 2;

/** The replica controller's stop decision, which every release and stop order cites. */
export function stopCause(record: Fact<'replica'> | undefined, replicaKey: string): Cause {
  if (!record) return causedByFact({ key: replicaKey, modRevision: 0 });
  return causedBy(decisionKey('replica', record.value.id, record.value.stopRequestedAt ?? record.value.createdAt, 'rc-stop'));
}

/**
 * Releases and stop orders, per node: an assignment whose replica is retired or gone is
 * deleted with its placement, and the node's allocation shrinks in the same txn; a replica
 * asked to stop gets `desired: stop` on its assignment so the agent stops it. A node's group
 * stops where its txn would pass MAX_OPS; the rest follow in the next steps, each chunk a
 * correct txn of its own (the allocation as read, less what that chunk released).
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
      const placement = gone ? placements.get(id) : undefined;
      const ownPlacement = placement !== undefined && placement.value.node === node;
      const cost = Math.max(2 + d.compares.length + (ownPlacement ? 1 : 0), d.ops.length + (gone ? 1 + (ownPlacement ? 1 : 0) : 1));
      if (Math.max(compares.length, ops.length) + cost > MAX_OPS - ALLOCATION_OPS) break; // the rest in the next step
      compares.push(unchanged(a), unchanged(rec, replicaKey), ...d.compares);
      ops.push(...d.ops);
      if (gone) {
        ops.push(deleteKey(a.key));
        if (ownPlacement) {
          compares.push(unchanged(placement));
          ops.push(deleteKey(placement.key));
        }
        // The allocation sums the replicas it lists: one it does not list (a repair under
        // way lists a prefix of them) is not subtracted.
        if (replicas.delete(id)) used = addResources(used, a.value.resources, -1);
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
 * How far a repair under way has come: the allocation lists exactly the first `m` of the
 * node's assignments (by replica id) with their sum, as a repair chunk leaves it; -1 when it
 * does not (the damaged record, where a repair starts).
 */
function repairedPrefix(alloc: Allocation | undefined, assigned: readonly Fact<'assigned'>[]): number {
  if (!alloc || alloc.replicas.length > assigned.length) return -1;
  const ids = [...alloc.replicas].sort();
  let used = noResources;
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== assigned[i]!.value.replica) return -1;
    used = addResources(used, assigned[i]!.value.resources);
  }
  return used.cpuMillis === alloc.used.cpuMillis && used.memoryBytes === alloc.used.memoryBytes ? ids.length : -1;
}

/**
 * An operator's repair request for a node with an open finding: the scheduler rebuilds the
 * allocation from the assignments it just read (the repair is a decision of its own), at
 * most REPAIR_CHUNK of them per step. Each chunk is a correct record on its own: the first
 * `m` assignments by replica id and their sum, the chunk's assignments compared with the
 * allocation (every assign and release rewrites it, and nothing is placed on the node while
 * the finding is open), so the next step goes on from it. The finding stays open until the
 * last chunk makes the allocation match; the auditor then closes it.
 */
export function planRepairs(view: ClusterView, repairs: Fact<'repair'>[], now: number) {
  const groups = new Map<string, Write>();
  for (const r of repairs) {
    const node = r.value.node;
    const audit = view.audits.get(node);
    if (!audit?.value.open || audit.value.revision !== r.value.finding) continue;
    const assigned = [...(view.byNode.get(node) ?? [])].sort((a, b) => (a.value.replica < b.value.replica ? -1 : a.value.replica > b.value.replica ? 1 : 0));
    const alloc = view.allocations.get(node);
    const tenure = view.nodes.get(node)?.kv.createRevision ?? alloc?.value.tenure ?? 0;
    const prefix = repairedPrefix(alloc?.value, assigned);
    if (prefix === assigned.length && alloc && alloc.value.tenure === tenure) continue; // it matches: the auditor closes the finding
    const from = Math.max(0, prefix);
    const chunk = assigned.slice(from, from + REPAIR_CHUNK);
    const upTo = from + chunk.length;
    const used = assigned.slice(0, upTo).reduce((s, a) => addResources(s, a.value.resources), noResources);
    const next: Allocation = { node, tenure, used, replicas: assigned.slice(0, upTo).map((a) => a.value.replica) };
    const done = upTo === assigned.length;
    const d = decide({
      kind: 'node',
      subject: node,
      controller: SCHEDULER,
      action: done ? 'repaired allocation' : 'repairing allocation',
      // One decision per chunk: chunks may follow each other within a millisecond.
      tag: done ? 'sched-repair' : `sched-repair-${upTo}`,
      at: now,
      evidence: [evidenceOf(r), evidenceOf(audit), ...(alloc ? [evidenceOf(alloc)] : []), ...chunk.slice(0, 32).map(evidenceOf)],
      cause: causedByFact(r),
      reasons: [
        `${r.value.requestedBy} asked to repair the finding at revision ${r.value.finding}`,
        done
          ? `rebuilt from ${assigned.length} assignment(s): ${used.cpuMillis}m cpu, ${used.memoryBytes} bytes`
          : `rebuilt from assignments ${from + 1} to ${upTo} of ${assigned.length} (at most ${REPAIR_CHUNK} a step): ${used.cpuMillis}m cpu, ${used.memoryBytes} bytes so far`,
      ],
    });
    groups.set(node, {
      compares: [unchanged(r), unchanged(audit), unchanged(alloc, buildKey('allocation', node)), ...chunk.map((a) => unchanged(a)), ...d.compares],
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
