import { buildKey, encodeFact } from '../../../core/keys.js';
import { makeDiagnostic } from '../../../core/diagnostics/error.js';
import type { Allocation, Assignment, ReplicaPlacement, ReplicaRecord } from '../../../core/model/facts.js';
import type { ServiceSpec } from '../../../core/model/service.js';
import { CONDITION_TEXT, type NodeRecord } from '../../../core/model/node.js';
import { absent, putFact, sameTenure, unchanged, type Fact } from '../../facts.js';
import { absentEvidence, causedBy, citeOf, decide, decisionKey, evidenceOf, type Evidence } from '../../decisions/record.js';
import { place as placeAmong, REPLICA_CAP, staticExclusion, textsOf, type Candidate, type Demand, type Placement, type Spread } from '../../placement/place.js';
import { createPlacer } from '../../placement/placer.js';
import { addResources, noResources } from '../../placement/quantities.js';
import { digest, isCordoned, isReady, type ClusterView } from '../view.js';
import type { Pending } from './types.js';
import type { Write } from '../../write.js';
import { MAX_OPS, MAX_TXN_BYTES } from './batch.js';
import { utf8Bytes } from '../../write.js';

export const SCHEDULER = 'scheduler';
/**
 * Placements on one node per step: one node's placements share a txn (its allocation record),
 * so they stop where that txn's compares would pass the store's per-branch limit (MAX_OPS):
 * each placement compares 4 keys (plus its gate's), the node 6 (28 placements without gates).
 */
export const MAX_PER_NODE = 36;
const PLACEMENT_COMPARES = 4;
const NODE_COMPARES = 6;
/**
 * What a placement writes besides its assignment's spec (the assignment's other fields, the
 * placement record, the decision, their keys): a node's placements stop where their bytes
 * would pass MAX_TXN_BYTES, so a txn of large specs fits etcd's request limit.
 */
const PLACEMENT_OVERHEAD_BYTES = 16_384;

export interface PlacementPlan {
  /**
   * Per node: compares and writes of every placement on it, allocation written once. Built
   * as they are taken, once (the step commits the first while later ones are built).
   */
  groups: Iterable<Write>;
  placed: number;
  unplaced: { pending: Pending; shortfall: string; basis: string; excluded: Record<string, number> }[];
  /** Stopped early (a node's txn is full); run again at once. */
  more: boolean;
}

export function demandOf(record: ReplicaRecord, spec: ServiceSpec): Demand {
  return { replica: record.id, service: record.service, resources: spec.resources, image: spec.image, placement: spec.placement };
}

export function candidatesOf(view: ClusterView): Candidate[] {
  return [...view.nodes.values()].map((n) => ({
    name: n.value.name,
    zone: n.value.zone,
    labels: n.value.labels,
    taints: n.value.taints,
    images: n.value.images,
    pulls: n.value.pulls,
    ready: isReady(view, n.value.name),
    audited: view.audits.get(n.value.name)?.value.open ?? false,
    cordoned: isCordoned(view, n.value.name),
    ...conditionOf(n.value),
    capacity: { cpuMillis: n.value.capacity.cpuMillis, memoryBytes: n.value.capacity.memoryBytes },
    used: view.allocations.get(n.value.name)?.value.used ?? noResources,
    replicas: { held: view.allocations.get(n.value.name)?.value.replicas.length ?? 0, cap: n.value.capacity.replicas },
  }));
}

/** The first condition the agent reports on its node, as the exclusion it is (`disk full (CCA-E0570)`). */
function conditionOf(n: NodeRecord): { condition?: string } {
  const c = n.conditions[0];
  return c ? { condition: `${CONDITION_TEXT[c.kind]} (${c.code})` } : {};
}

/** Replicas of each service per zone and per node, from the live assignments. */
export function spreadCounts(view: ClusterView, live: (replica: string) => boolean) {
  const zone = new Map<string, Map<string, number>>();
  const node = new Map<string, Map<string, number>>();
  const bump = (m: Map<string, Map<string, number>>, service: string, k: string) => {
    const inner = m.get(service) ?? new Map<string, number>();
    inner.set(k, (inner.get(k) ?? 0) + 1);
    m.set(service, inner);
  };
  for (const a of view.assignments.values()) {
    if (!live(a.value.replica)) continue;
    const n = view.nodes.get(a.value.node);
    bump(node, a.value.service, a.value.node);
    if (n) bump(zone, a.value.service, n.value.zone);
  }
  return { zone, node };
}

/** Per service, the nodes holding one of its volumes (`/volumes/`). */
/** Service → the nodes holding its volumes → when a replica last used them there. */
export type VolumeNodes = Map<string, Map<string, number>>;

/**
 * Stateful affinity: a replica with a volume goes back to a ready node that holds its
 * service's volume and runs no replica of the service now (its data is there), and waits
 * for that node when it is full. With no such node ready and usable it is placed as any
 * other and gets a fresh volume where it lands. Undefined when the rule does not apply.
 */
function placeStateful(d: Demand, spec: ServiceSpec, nodes: readonly Candidate[], spread: Spread, volumeNodes: VolumeNodes): Placement | undefined {
  const holders = volumeNodes.get(d.service);
  if (spec.volumes.length === 0 || !holders) return undefined;
  // Only capacity makes it wait: a holder it may not use at all (a taint, its constraints, an
  // audit) is no holder, and the replica is placed as any other.
  const texts = textsOf(d);
  const usable = nodes.filter((n) => holders.has(n.name) && (spread.node.get(n.name) ?? 0) === 0 && staticExclusion(d, n, texts) === undefined);
  if (usable.length === 0) return undefined;
  // Of several holders (the service moved once, e.g. after a fence), the one used last has the newest data.
  const newest = Math.max(...usable.map((n) => holders.get(n.name)!));
  const free = usable.filter((n) => holders.get(n.name) === newest);
  const r = placeAmong(d, free, spread);
  const names = free.map((n) => n.name).join(', ');
  if (r.ok) return { ...r, reasons: [`its volume ${spec.volumes.map((v) => v.name).join(', ')} is held on ${r.node}`, ...r.reasons] };
  const volume = spec.volumes[0]!.name;
  const diag = makeDiagnostic('CCA-E0420', { replica: d.replica, service: d.service, volume, nodes: names, shortfall: r.shortfall });
  return { ...r, shortfall: `${diag.code} ${diag.message}` };
}

/** The view a pending decision was made on: if it is the same next time, nothing is rewritten. */
function basisOf(view: ClusterView, spec: Fact<'service'>): string {
  const parts = [`spec ${spec.kv.modRevision}`];
  for (const [name, n] of view.nodes) {
    parts.push(`${name} ${n.kv.createRevision} ${n.kv.modRevision} ${view.statuses.get(name)?.kv.modRevision ?? 0} ${view.allocations.get(name)?.kv.modRevision ?? 0} ${view.audits.get(name)?.kv.modRevision ?? 0} ${view.nodeOps.get(name)?.kv.modRevision ?? 0}`);
  }
  return digest(parts.sort());
}

/** One node's placements in a step, decided; their writes are built later (nodeWrites). */
interface NodePlacements {
  placed: { pending: Pending; reasons: string[] }[];
  /** Compares its placements take, without the node's own (NODE_COMPARES). */
  compares: number;
  bytes: number;
}

/**
 * Plan every pending replica in order (oldest first) against the view, updating the view's
 * allocations in memory as it goes so no two placements in one step overcommit a node.
 */
export function planPlacements(view: ClusterView, pending: readonly Pending[], live: (replica: string) => boolean, now: number, volumeNodes: VolumeNodes = new Map()): PlacementPlan {
  const nodes = candidatesOf(view);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const spread = spreadCounts(view, live);
  const perNode = new Map<string, NodePlacements>();
  const specBytes = new Map<Fact<'service'>, number>();
  const bytesOf = (spec: Fact<'service'>) => {
    let n = specBytes.get(spec);
    if (n === undefined) specBytes.set(spec, (n = utf8Bytes(spec.kv.value) + PLACEMENT_OVERHEAD_BYTES));
    return n;
  };
  const plan: PlacementPlan = { groups: [], placed: 0, unplaced: [], more: false };
  const place = createPlacer(nodes);
  for (const p of pending) {
    const d = demandOf(p.record.value, p.spec.value);
    const serviceSpread = { zone: spread.zone.get(d.service) ?? new Map<string, number>(), node: spread.node.get(d.service) ?? new Map<string, number>() };
    const result = placeStateful(d, p.spec.value, nodes, serviceSpread, volumeNodes) ?? place(d, serviceSpread);
    if (!result.ok) {
      plan.unplaced.push({ pending: p, shortfall: result.shortfall, basis: basisOf(view, p.spec), excluded: result.excluded });
      continue;
    }
    const target = byName.get(result.node)!;
    const group = perNode.get(target.name) ?? { placed: [], compares: 0, bytes: 0 };
    const compares = group.compares + PLACEMENT_COMPARES + (p.gate?.compares.length ?? 0);
    const bytes = group.bytes + bytesOf(p.spec);
    if (group.placed.length >= MAX_PER_NODE || compares + NODE_COMPARES > MAX_OPS || (group.placed.length > 0 && bytes > MAX_TXN_BYTES)) {
      plan.more = true;
      break;
    }
    perNode.set(target.name, group);
    group.bytes = bytes;
    group.compares = compares;
    group.placed.push({ pending: p, reasons: result.reasons });
    target.used = addResources(target.used, d.resources);
    if (target.replicas) target.replicas = { held: target.replicas.held + 1, cap: target.replicas.cap };
    const inc = (m: Map<string, Map<string, number>>, k: string) => {
      const inner = m.get(d.service) ?? new Map<string, number>();
      inner.set(k, (inner.get(k) ?? 0) + 1);
      m.set(d.service, inner);
    };
    inc(spread.zone, target.zone);
    inc(spread.node, target.name);
    plan.placed++;
  }
  plan.groups = nodeWrites(view, perNode, byName, now);
  return plan;
}

/**
 * Each node's writes, built once its placements are all decided (its allocation counts them
 * all): its placements' assignments, placement records and decisions, then its allocation.
 */
function* nodeWrites(view: ClusterView, perNode: ReadonlyMap<string, NodePlacements>, byName: Map<string, Candidate>, now: number): Generator<Write, void, undefined> {
  const encoded: EncodeCache = { specs: new Map(), nodes: new Map() };
  for (const [name, placed] of perNode) {
    const g: Write = { compares: [], ops: [] };
    for (const { pending, reasons } of placed.placed) placementWrites(view, pending, name, reasons, now, g, encoded);
    const node = view.nodes.get(name)!;
    const alloc = view.allocations.get(name);
    const before: Allocation = alloc?.value ?? { node: name, tenure: node.kv.createRevision, used: noResources, replicas: [] };
    const allocation: Allocation = {
      node: name,
      tenure: node.kv.createRevision,
      used: byName.get(name)!.used,
      replicas: [...before.replicas, ...placed.placed.map((x) => x.pending.record.value.id)].sort(),
    };
    const status = view.statuses.get(name)!;
    const auditKey = buildKey('audit', name);
    g.compares.push(
      sameTenure(node.key, node.kv.createRevision),
      // The record as read (its capacity): an agent restarted within its lease re-registers
      // under the same tenure, possibly declaring less.
      unchanged(node),
      unchanged(status),
      unchanged(alloc, buildKey('allocation', name)),
      unchanged(view.audits.get(name), auditKey),
      // Cordon and drain are part of what a placement relied on: one written meanwhile wins.
      unchanged(view.nodeOps.get(name), buildKey('nodeOp', name)),
    );
    g.ops.push(putFact('allocation', [name], allocation));
    yield g;
  }
}

/**
 * What every placement of one step shares, built once: each spec's JSON (validated once,
 * then spliced into every assignment of that spec), and each node's evidence.
 */
interface EncodeCache {
  specs: Map<Fact<'service'>, string>;
  nodes: Map<string, Evidence[]>;
}

/**
 * An assignment embeds its spec; validating and serialising the whole of it per replica
 * would dominate the step, so the first assignment of each spec in a step is validated
 * (encodeFact) and the rest reuse that spec's JSON, in the same field order.
 */
function encodeAssignment(a: Assignment, spec: Fact<'service'>, cache: EncodeCache): string {
  let specJson = cache.specs.get(spec);
  if (specJson === undefined) {
    encodeFact('assigned', a);
    cache.specs.set(spec, (specJson = JSON.stringify(a.spec)));
  }
  const { spec: _spec, desired, placedAt, ...head } = a;
  return `${JSON.stringify(head).slice(0, -1)},"spec":${specJson},${JSON.stringify({ desired, placedAt }).slice(1)}`;
}

/**
 * What a placement read about its node, as evidence: the registration (capacity, labels,
 * images; the same under every placement on the node in a step, so it is cited by hash,
 * hashed once per step), the status and the allocation as read, and any operator intent.
 */
function nodeEvidence(view: ClusterView, node: string, cache: EncodeCache): Evidence[] {
  let e = cache.nodes.get(node);
  if (e) return e;
  const alloc = view.allocations.get(node);
  const ops = view.nodeOps.get(node);
  e = [citeOf(view.nodes.get(node)!), evidenceOf(view.statuses.get(node)!), alloc ? evidenceOf(alloc) : absentEvidence(buildKey('allocation', node)), ...(ops ? [evidenceOf(ops)] : [])];
  cache.nodes.set(node, e);
  return e;
}

function placementWrites(view: ClusterView, p: Pending, node: string, reasons: string[], now: number, g: Write, cache: EncodeCache) {
  const r = p.record.value;
  const tenure = view.nodes.get(node)!.kv.createRevision;
  const decision = decide({
    kind: 'replica',
    subject: r.id,
    controller: SCHEDULER,
    action: `placed on ${node}`,
    tag: 'sched-place',
    at: now,
    evidence: [evidenceOf(p.record), ...nodeEvidence(view, node, cache), ...(p.gate?.evidence ?? [])],
    cause: causedBy(decisionKey('replica', r.id, r.createdAt, 'rc-create')),
    reasons: [...reasons, ...(p.gate?.reasons ?? [])],
  }, true);
  const assignedKey = buildKey('assigned', node, r.id);
  const placementKey = buildKey('placement', r.id);
  g.compares.push(unchanged(p.record), absent(assignedKey), absent(placementKey), ...(p.gate?.compares ?? []), ...decision.compares);
  const assignment: Assignment = {
    replica: r.id,
    service: r.service,
    node,
    tenure,
    resources: p.spec.value.resources,
    specRevision: r.specRevision,
    spec: p.spec.value,
    desired: 'run',
    placedAt: now,
  };
  g.ops.push(
    { put: { key: assignedKey, value: encodeAssignment(assignment, p.spec, cache) } },
    { put: { key: placementKey, value: JSON.stringify({ replica: r.id, service: r.service, node, tenure, at: now } satisfies ReplicaPlacement) } },
    ...decision.ops,
  );
}

/** Reasons of a pending decision: the shortfall, plus the coded diagnostic users look up. */
export function pendingReasons(p: Pending, shortfall: string, excluded: Record<string, number>): string[] {
  const reasons = [shortfall, makeDiagnostic('CCA-E0401', { replica: p.record.value.id, service: p.record.value.service, shortfall }).message];
  const total = Object.values(excluded).reduce((a, b) => a + b, 0);
  const cordoned = excluded.cordoned ?? 0;
  if (cordoned > 0) reasons.push(makeDiagnostic('CCA-E0440', { replica: p.record.value.id, service: p.record.value.service, count: cordoned }).message);
  const capped = excluded[REPLICA_CAP] ?? 0;
  if (capped > 0) {
    const d = makeDiagnostic('CCA-E0451', { replica: p.record.value.id, service: p.record.value.service, count: capped });
    reasons.push(`${d.code} ${d.message}`);
  }
  // Every node lacks the image: counted under the exclusion's own key (place.ts's textsOf), not found by its wording.
  const image = textsOf(demandOf(p.record.value, p.spec.value)).image;
  if (total > 0 && excluded[image] === total) {
    reasons.push(makeDiagnostic('CCA-E0316', { service: p.spec.value.name, image: p.spec.value.image, known: 'see the nodes\' catalogues (`cca get nodes`)' }).message);
  }
  return reasons;
}
