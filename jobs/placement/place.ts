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
  /** Status ready under the node's current tenure. */
  ready: boolean;
  /** An open audit finding blocks new placements (rule 4). */
  audited: boolean;
  capacity: Resources;
  used: Resources;
}

/** How many replicas of the demand's service are already in each zone and on each node. */
export interface Spread {
  zone: ReadonlyMap<string, number>;
  node: ReadonlyMap<string, number>;
}

export type Placement =
  | { ok: true; node: string; reasons: string[] }
  | { ok: false; shortfall: string; excluded: Record<string, number> };

/** Why one node cannot take the demand, or undefined when it can. Checked in this order. */
export function exclusion(d: Demand, n: Candidate): string | undefined {
  if (!n.ready) return 'not ready';
  if (n.audited) return 'an open audit finding';
  if (!Object.hasOwn(n.images, d.image)) return `image ${d.image} not in its catalogue`;
  const taints = untoleratedTaints(d.placement.accept, n.taints);
  if (taints.length > 0) return `taint ${taints.join(', ')} not accepted`;
  for (const c of d.placement.require) if (!matchesConstraint(c, n)) return `require ${constraintText(c)}`;
  for (const c of d.placement.restrict) if (matchesConstraint(c, n)) return `restrict ${constraintText(c)}`;
  if (n.capacity.cpuMillis - n.used.cpuMillis < d.resources.cpuMillis) return `cpu`;
  if (n.capacity.memoryBytes - n.used.memoryBytes < d.resources.memoryBytes) return `memory`;
  return undefined;
}

export function place(d: Demand, nodes: readonly Candidate[], spread: Spread): Placement {
  const excluded: Record<string, number> = {};
  let best: Candidate | undefined;
  let bestScore: number[] = [];
  let fits = 0;
  for (const n of nodes) {
    const why = exclusion(d, n);
    if (why !== undefined) {
      excluded[why] = (excluded[why] ?? 0) + 1;
      continue;
    }
    fits++;
    const s = score(d, n, spread);
    if (!best || better(s, n.name, bestScore, best.name)) {
      best = n;
      bestScore = s;
    }
  }
  if (!best) return { ok: false, shortfall: shortfallText(d, nodes.length, excluded), excluded };
  return { ok: true, node: best.name, reasons: placedReasons(d, best, spread, fits, nodes.length) };
}

/**
 * Lower is better, compared in order: spread (the service's replicas in the node's zone,
 * then on the node, in the spec's spread order), then preference weight, then how full
 * the node would be (least allocated first, the fuller of cpu and memory counts).
 */
function score(d: Demand, n: Candidate, spread: Spread): number[] {
  const s: number[] = [];
  for (const attr of d.placement.spread) s.push(attr === 'zone' ? spread.zone.get(n.zone) ?? 0 : spread.node.get(n.name) ?? 0);
  let weight = 0;
  for (const p of d.placement.prefer) if (matchesConstraint(p.constraint, n)) weight += p.weight;
  s.push(-weight);
  const cpu = (n.used.cpuMillis + d.resources.cpuMillis) / n.capacity.cpuMillis;
  const mem = (n.used.memoryBytes + d.resources.memoryBytes) / n.capacity.memoryBytes;
  s.push(Math.max(cpu, mem));
  return s;
}

function better(a: number[], aName: string, b: number[], bName: string): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return aName < bName;
}

function placedReasons(d: Demand, n: Candidate, spread: Spread, fits: number, total: number): string[] {
  const reasons = [`${fits} of ${total} nodes fit ${cpuText(d.resources.cpuMillis)} and ${memoryText(d.resources.memoryBytes)}`];
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
      return `${nodes(k)} excluded by ${why}`;
    });
  return `${need}: ${parts.join('; ')}`;
}
