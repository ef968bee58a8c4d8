import { matchesConstraint } from '../../core/model/constraints.js';
import { Heap } from './heap.js';
import { better, fullness, hasReplicaRoom, place, placedReasons, score, staticExclusion, textsOf, type Candidate, type Demand, type Placement, type Spread } from './place.js';

/** A node in a group's heap, with the `used` it was scored on (stale once the node's `used` is replaced). */
interface Entry {
  node: Candidate;
  used: Candidate['used'];
  full: number;
}

/** Nodes that share everything static in the score: zone and preference weight. */
interface Group {
  zone: string;
  weight: number;
  heap: Heap<Entry>;
}

/** Per demand shape (one service's placement rules, image and resources) for the step. */
interface Shape {
  groups: Group[];
  feasible: Set<Candidate>;
  /** Nodes holding replicas of the service: scored one by one (there are few). */
  occupied: Set<Candidate>;
}

const byFullThenName = (a: Entry, b: Entry) => a.full < b.full || (a.full === b.full && a.node.name < b.node.name);

/**
 * `place` for many demands in one scheduler step, same answers, without scoring every
 * node per replica. Per demand shape it keeps the nodes that pass the hard constraints in
 * groups of equal (zone, preference weight), each a heap ordered by fullness; a replica
 * then compares only each group's top against the few nodes already holding the service.
 *
 * Contract with the caller: between calls a candidate's `used` may only grow, by replacing
 * the object (that is how a stale heap entry is recognised); nothing else may change. A
 * demand that fits nowhere is answered by the exhaustive `place`, for its exact shortfall.
 */
export function createPlacer(nodes: readonly Candidate[]): (d: Demand, spread: Spread) => Placement {
  // Keyed by the placement rules' object first (one per service spec), then the rest.
  const shapes = new Map<Demand['placement'], Map<string, Shape>>();
  const byName = new Map(nodes.map((n) => [n.name, n]));

  /**
   * What of a shape depends only on the demand's image, resources and placement rules (not
   * its service): the feasible nodes and their groups' heaps. Services with the same rules
   * and size (most of a cluster's) share one, each taking copies of its heaps: the nodes'
   * filters and fullness were worked out per service before, 1,000 nodes × 500 services a
   * step. Entries scored on an older `used` are stale, and settled as always (topOf).
   */
  const bases = new Map<string, { groups: Group[]; feasible: Set<Candidate> }>();
  const baseOf = (d: Demand) => {
    const { require, restrict, prefer, accept } = d.placement;
    const key = JSON.stringify([d.image, d.resources.cpuMillis, d.resources.memoryBytes, require, restrict, prefer, accept]);
    let base = bases.get(key);
    if (base) return base;
    const texts = textsOf(d);
    const groups = new Map<string, Group>();
    base = { groups: [], feasible: new Set() };
    for (const n of nodes) {
      if (staticExclusion(d, n, texts) !== undefined) continue;
      base.feasible.add(n);
      let weight = 0;
      for (const p of prefer) if (matchesConstraint(p.constraint, n)) weight += p.weight;
      const gk = `${n.zone}\0${weight}`;
      let g = groups.get(gk);
      if (!g) groups.set(gk, (g = { zone: n.zone, weight, heap: new Heap(byFullThenName) }));
      g.heap.push({ node: n, used: n.used, full: fullness(d, n) });
    }
    base.groups = [...groups.values()];
    bases.set(key, base);
    return base;
  };

  const shapeOf = (d: Demand): Shape => {
    let byRest = shapes.get(d.placement);
    if (!byRest) shapes.set(d.placement, (byRest = new Map()));
    const key = `${d.service}\0${d.image}\0${d.resources.cpuMillis}\0${d.resources.memoryBytes}`;
    let shape = byRest.get(key);
    if (shape) return shape;
    const base = baseOf(d);
    shape = { groups: base.groups.map((g) => ({ zone: g.zone, weight: g.weight, heap: g.heap.clone() })), feasible: base.feasible, occupied: new Set() };
    byRest.set(key, shape);
    return shape;
  };

  const fits = (d: Demand, n: Candidate) =>
    n.capacity.cpuMillis - n.used.cpuMillis >= d.resources.cpuMillis && n.capacity.memoryBytes - n.used.memoryBytes >= d.resources.memoryBytes && hasReplicaRoom(n);

  /** The group's best node holding none of the service's replicas, after settling stale entries. */
  const topOf = (d: Demand, shape: Shape, g: Group, spread: Spread): Candidate | undefined => {
    for (;;) {
      const e = g.heap.peek();
      if (!e) return undefined;
      if ((spread.node.get(e.node.name) ?? 0) > 0 || shape.occupied.has(e.node)) {
        g.heap.pop();
        shape.occupied.add(e.node);
        continue;
      }
      if (e.used !== e.node.used) {
        g.heap.pop();
        g.heap.push({ node: e.node, used: e.node.used, full: fullness(d, e.node) });
        continue;
      }
      if (!fits(d, e.node)) {
        g.heap.pop(); // nodes only fill up during a step: it will not fit this shape again
        continue;
      }
      return e.node;
    }
  };

  return (d, spread) => {
    const shape = shapeOf(d);
    for (const name of spread.node.keys()) {
      const n = byName.get(name);
      if (n && shape.feasible.has(n)) shape.occupied.add(n);
    }
    let best: Candidate | undefined;
    let bestScore: number[] = [];
    const consider = (n: Candidate) => {
      const s = score(d, n, spread);
      if (!best || better(s, n.name, bestScore, best.name)) {
        best = n;
        bestScore = s;
      }
    };
    for (const g of shape.groups) {
      const n = topOf(d, shape, g, spread);
      if (n) consider(n);
    }
    for (const n of shape.occupied) if (fits(d, n)) consider(n);
    if (!best) return place(d, nodes, spread);
    return { ok: true, node: (best as Candidate).name, reasons: placedReasons(d, best, spread) };
  };
}
