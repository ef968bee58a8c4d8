import { constraintText, matchesConstraint, untoleratedTaints, type Constraint, type Preference } from '../../core/model/constraints.js';
import { cpuText, memoryText, type Resources } from './quantities.js';

/**
 * The placement decision as a pure function: (demand, candidate nodes, current spread) →
 * a node with reasons, or a shortfall naming what excluded each node. No store, no clock:
 * the scheduler feeds it a view, tests and the benchmark call it directly.
 */
export interface Demand {
  replica: string;
  service: string;
  resources: Resources;
  image: string;
  placement: {
    spread: readonly ('zone' | 'node')[];
    require: readonly Constraint[];
    restrict: readonly Constraint[];
    prefer: readonly Preference[];
    accept: readonly string[];
  };
}

export interface Candidate {
  name: string;
  zone: string;
  labels: Readonly<Record<string, string>>;
  taints: readonly string[];
  images: Readonly<Record<string, string>>;
  /** The node pulls images outside its catalogue (containerd): any image fits. */
  pulls?: boolean;
  /** Status ready under the node's current tenure. */
  ready: boolean;
  /** An open audit finding blocks new placements (rule 4). */
  audited: boolean;
  /** Cordoned or draining by an operator (`/nodeops/<node>`): no new placements. */
  cordoned?: boolean;
  /** What the agent reports wrong with the node (`disk full (CCA-E0570)`): no new placements while it holds. */
  condition?: string;
  capacity: Resources;
  used: Resources;
  /**
   * Replicas the node holds and may hold (`--max-replicas`): a third resource, counted in its
   * allocation record. Like `used`, `replicas.held` only grows during a step, by replacing the
   * object. Absent: no cap (pure tests of the other rules).
   */
  replicas?: { held: number; cap: number };
}

/** The exclusion of a node that holds as many replicas as it may (`shortfallText` words it). */
export const REPLICA_CAP = 'replicas';

/** Does the node hold fewer replicas than its cap? */
export function hasReplicaRoom(n: Pick<Candidate, 'replicas'>): boolean {
  return n.replicas === undefined || n.replicas.held < n.replicas.cap;
}

/** How many replicas of the demand's service are already in each zone and on each node. */
export interface Spread {
  zone: ReadonlyMap<string, number>;
  node: ReadonlyMap<string, number>;
}

export type Placement =
  | { ok: true; node: string; reasons: string[] }
  | { ok: false; shortfall: string; excluded: Record<string, number> };

/** Reason texts of one demand, built once rather than once per excluded node. */
export interface Texts {
  image: string;
  require: string[];
  restrict: string[];
}

export function textsOf(d: Demand): Texts {
  return {
    image: `image ${d.image} not in its catalogue`,
    require: d.placement.require.map((c) => `require ${constraintText(c)}`),
    restrict: d.placement.restrict.map((c) => `restrict ${constraintText(c)}`),
  };
}

/** Why one node cannot take the demand, or undefined when it can. Checked in this order. */
export function exclusion(d: Demand, n: Candidate): string | undefined {
  const why = staticExclusion(d, n, textsOf(d));
  if (why !== undefined) return why;
  if (n.capacity.cpuMillis - n.used.cpuMillis < d.resources.cpuMillis) return 'cpu';
  if (n.capacity.memoryBytes - n.used.memoryBytes < d.resources.memoryBytes) return 'memory';
  if (!hasReplicaRoom(n)) return REPLICA_CAP;
  return undefined;
}

/** The checks that do not depend on the node's free capacity. */
export function staticExclusion(d: Demand, n: Candidate, texts: Texts): string | undefined {
  if (!n.ready) return 'not ready';
  if (n.audited) return 'an open audit finding';
  if (n.cordoned) return 'cordoned';
  if (n.condition !== undefined) return n.condition;
  if (!n.pulls && !Object.hasOwn(n.images, d.image)) return texts.image;
  if (n.taints.length > 0) {
    const taints = untoleratedTaints(d.placement.accept, n.taints);
    if (taints.length > 0) return `taint ${taints.join(', ')} not accepted`;
  }
  const { require, restrict } = d.placement;
  for (let i = 0; i < require.length; i++) if (!matchesConstraint(require[i]!, n)) return texts.require[i];
  for (let i = 0; i < restrict.length; i++) if (matchesConstraint(restrict[i]!, n)) return texts.restrict[i];
  return undefined;
}

/**
 * The reference: every node filtered, every survivor scored. `createPlacer` (placer.ts)
 * gives the same answers faster for many demands; tests hold them to each other.
 */
export function place(d: Demand, nodes: readonly Candidate[], spread: Spread): Placement {
  const excluded: Record<string, number> = {};
  let best: Candidate | undefined;
  let bestScore: number[] = [];
  for (const n of nodes) {
    const why = exclusion(d, n);
    if (why !== undefined) {
      excluded[why] = (excluded[why] ?? 0) + 1;
      continue;
    }
    const s = score(d, n, spread);
    if (!best || better(s, n.name, bestScore, best.name)) {
      best = n;
      bestScore = s;
    }
  }
  if (!best) return { ok: false, shortfall: shortfallText(d, nodes.length, excluded), excluded };
  return { ok: true, node: best.name, reasons: placedReasons(d, best, spread) };
}

/**
 * Lower is better, compared in order: spread (the service's replicas in the node's zone,
 * then on the node, in the spec's spread order), then preference weight (higher first),
 * then how full the node would be (least allocated first; the fuller of cpu and memory),
 * then the name, so equal scores still decide deterministically.
 */
export function score(d: Demand, n: Candidate, spread: Spread): number[] {
  const s: number[] = d.placement.spread.map((attr) => spreadOf(attr, n, spread));
  let weight = 0;
  for (const p of d.placement.prefer) if (matchesConstraint(p.constraint, n)) weight += p.weight;
  s.push(-weight, fullness(d, n));
  return s;
}

export function fullness(d: Demand, n: Candidate): number {
  const fc = (n.used.cpuMillis + d.resources.cpuMillis) / n.capacity.cpuMillis;
  const fm = (n.used.memoryBytes + d.resources.memoryBytes) / n.capacity.memoryBytes;
  return fc > fm ? fc : fm;
}

export function better(a: readonly number[], aName: string, b: readonly number[], bName: string): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return aName < bName;
}

export function spreadOf(attr: 'zone' | 'node', n: Candidate, spread: Spread): number {
  return attr === 'zone' ? spread.zone.get(n.zone) ?? 0 : spread.node.get(n.name) ?? 0;
}

export function placedReasons(d: Demand, n: Candidate, spread: Spread): string[] {
  const reasons = [`fits ${cpuText(d.resources.cpuMillis)} and ${memoryText(d.resources.memoryBytes)} memory`];
  for (const attr of d.placement.spread) {
    const count = attr === 'zone' ? spread.zone.get(n.zone) ?? 0 : spread.node.get(n.name) ?? 0;
    reasons.push(`spread by ${attr}: ${attr === 'zone' ? `zone ${n.zone}` : `node ${n.name}`} had ${count} replica(s) of ${d.service}, the fewest`);
  }
  const prefs = d.placement.prefer.filter((p) => matchesConstraint(p.constraint, n));
  if (prefs.length > 0) reasons.push(`preferred: ${prefs.map((p) => `${constraintText(p.constraint)} (weight ${p.weight})`).join(', ')}`);
  const freeCpu = n.capacity.cpuMillis - n.used.cpuMillis - d.resources.cpuMillis;
  const freeMem = n.capacity.memoryBytes - n.used.memoryBytes - d.resources.memoryBytes;
  reasons.push(`left free on ${n.name}: ${cpuText(freeCpu)}, ${memoryText(freeMem)} memory`);
  return reasons;
}

/** "needs 2 cpu and 512Mi memory: 3 nodes have < 2 cpu free; 1 node excluded by require zone in ["a"]". */
export function shortfallText(d: Demand, total: number, excluded: Record<string, number>): string {
  const need = `needs ${cpuText(d.resources.cpuMillis)} and ${memoryText(d.resources.memoryBytes)} memory`;
  if (total === 0) return `${need}: no node is registered and ready`;
  const nodes = (k: number) => (k === 1 ? '1 node' : `${k} nodes`);
  const parts = Object.entries(excluded)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([why, k]) => {
      if (why === 'cpu') return `${nodes(k)} ${k === 1 ? 'has' : 'have'} < ${cpuText(d.resources.cpuMillis)} free`;
      if (why === 'memory') return `${nodes(k)} ${k === 1 ? 'has' : 'have'} < ${memoryText(d.resources.memoryBytes)} memory free`;
      if (why === 'not ready') return `${nodes(k)} not ready`;
      if (why === REPLICA_CAP) return `${nodes(k)} ${k === 1 ? 'holds' : 'hold'} as many replicas as ${k === 1 ? 'it allows' : 'they allow'}`;
      return `${nodes(k)} excluded by ${why}`;
    });
  return `${need}: ${parts.join('; ')}`;
}
