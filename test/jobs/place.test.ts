import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { place, type Candidate, type Demand, type Spread } from '../../jobs/placement/place.js';
import { createPlacer } from '../../jobs/placement/placer.js';
import { addResources } from '../../jobs/placement/quantities.js';

const Gi = 1024 ** 3;
const node = (name: string, over: Partial<Candidate> = {}): Candidate => ({
  name,
  zone: 'a',
  labels: {},
  taints: [],
  images: { 'web:1': 'sha256:1' },
  ready: true,
  audited: false,
  capacity: { cpuMillis: 4_000, memoryBytes: 8 * Gi },
  used: { cpuMillis: 0, memoryBytes: 0 },
  ...over,
});
const demand = (over: Partial<Demand['placement']> = {}, resources = { cpuMillis: 1_000, memoryBytes: Gi }): Demand => ({
  replica: 'web-aaaaaaaa',
  service: 'web',
  resources,
  image: 'web:1',
  placement: { spread: ['zone', 'node'], require: [], restrict: [], prefer: [], accept: [], ...over },
});
const none: Spread = { zone: new Map(), node: new Map() };

describe('place: fit', () => {
  test('a node that pulls from registries takes an image outside its catalogue; the placer agrees', () => {
    const nodes = [node('n1', { images: {} }), node('n2', { images: {}, pulls: true })];
    expect(place(demand(), nodes, none)).toMatchObject({ ok: true, node: 'n2' });
    expect(place(demand(), [node('n1', { images: {} })], none).ok).toBe(false);
    expect(createPlacer(nodes)(demand(), none)).toMatchObject({ ok: true, node: 'n2' });
  });
  test('a node without enough free cpu or memory is excluded, and the shortfall says how many', () => {
    const r = place(demand({}, { cpuMillis: 2_000, memoryBytes: Gi }), [node('n1', { used: { cpuMillis: 3_000, memoryBytes: 0 } }), node('n2', { used: { cpuMillis: 2_500, memoryBytes: 0 } }), node('n3', { used: { cpuMillis: 0, memoryBytes: 8 * Gi } })], none);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.shortfall).toBe('needs 2 cpu and 1Gi memory: 2 nodes have < 2 cpu free; 1 node has < 1Gi memory free');
  });
  test('exactly full is a fit', () => {
    const r = place(demand({}, { cpuMillis: 4_000, memoryBytes: 8 * Gi }), [node('n1')], none);
    expect(r).toMatchObject({ ok: true, node: 'n1' });
  });
  test('not ready, an open audit finding and a missing image exclude a node', () => {
    const r = place(demand(), [node('n1', { ready: false }), node('n2', { audited: true }), node('n3', { images: {} })], none);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.shortfall).toBe('needs 1 cpu and 1Gi memory: 1 node excluded by an open audit finding; 1 node excluded by image web:1 not in its catalogue; 1 node not ready');
  });
  test('no nodes at all', () => {
    const r = place(demand(), [], none);
    expect(!r.ok && r.shortfall).toBe('needs 1 cpu and 1Gi memory: no node is registered and ready');
  });
});

describe('place: each constraint kind', () => {
  const nodes = [node('n1', { zone: 'a', labels: { disk: 'ssd' } }), node('n2', { zone: 'b' }), node('n3', { zone: 'c', taints: ['dedicated=db'] })];
  test('require keeps only matching nodes, and names itself in the shortfall', () => {
    expect(place(demand({ require: [{ attribute: 'zone', op: '==', values: ['b'] }] }), nodes, none)).toMatchObject({ ok: true, node: 'n2' });
    const r = place(demand({ require: [{ attribute: 'zone', op: 'in', values: ['x'] }] }, { cpuMillis: 2_000, memoryBytes: Gi }), nodes, none);
    expect(!r.ok && r.shortfall).toBe('needs 2 cpu and 1Gi memory: 2 nodes excluded by require zone in ["x"]; 1 node excluded by taint dedicated=db not accepted');
  });
  test('restrict excludes matching nodes', () => {
    expect(place(demand({ restrict: [{ attribute: 'label.disk', op: '!=', values: ['ssd'] }] }), nodes, none)).toMatchObject({ ok: true, node: 'n1' });
  });
  test('prefer weights win over least-allocated but not over spread', () => {
    const busy = [node('n1', { zone: 'a', labels: { disk: 'ssd' }, used: { cpuMillis: 2_000, memoryBytes: 0 } }), node('n2', { zone: 'a' })];
    expect(place(demand({ prefer: [{ constraint: { attribute: 'label.disk', op: '==', values: ['ssd'] }, weight: 50 }] }), busy, none)).toMatchObject({ node: 'n1' });
    expect(place(demand(), busy, none)).toMatchObject({ node: 'n2' });
  });
  test('taints repel unless accepted, by key or by key=value', () => {
    const tainted = [node('n3', { taints: ['dedicated=db'] })];
    expect(place(demand(), tainted, none).ok).toBe(false);
    expect(place(demand({ accept: ['dedicated'] }), tainted, none)).toMatchObject({ ok: true });
    expect(place(demand({ accept: ['dedicated=db'] }), tainted, none)).toMatchObject({ ok: true });
    expect(place(demand({ accept: ['dedicated=web'] }), tainted, none).ok).toBe(false);
  });
});

describe('place: spread', () => {
  test('zones first, then nodes', () => {
    const nodes = [node('a1', { zone: 'a' }), node('a2', { zone: 'a' }), node('b1', { zone: 'b' })];
    const spread: Spread = { zone: new Map([['a', 1], ['b', 1]]), node: new Map([['a1', 1], ['b1', 1]]) };
    expect(place(demand(), nodes, spread)).toMatchObject({ node: 'a2' });
    const zoneHeavy: Spread = { zone: new Map([['a', 2]]), node: new Map([['a1', 1], ['a2', 1]]) };
    expect(place(demand(), nodes, zoneHeavy)).toMatchObject({ node: 'b1' });
  });
  test('spread by node only ignores zones', () => {
    const nodes = [node('a1', { zone: 'a' }), node('b1', { zone: 'b' })];
    const spread: Spread = { zone: new Map([['a', 5]]), node: new Map([['b1', 1]]) };
    expect(place(demand({ spread: ['node'] }), nodes, spread)).toMatchObject({ node: 'a1' });
  });
});

/** A random cluster and a stream of demands; the placer must pick exactly what `place` picks. */
const clusterArb = fc.record({
  nodes: fc.array(
    fc.record({
      zone: fc.constantFrom('a', 'b', 'c'),
      cpu: fc.constantFrom(1_000, 2_000, 4_000),
      mem: fc.constantFrom(1, 2, 4),
      ssd: fc.boolean(),
      taint: fc.boolean(),
      ready: fc.boolean(),
    }),
    { minLength: 0, maxLength: 12 },
  ),
  demands: fc.array(
    fc.record({
      service: fc.constantFrom('s1', 's2', 's3', 's4', 's5'),
      cpu: fc.constantFrom(250, 500, 1_000),
      mem: fc.constantFrom(256, 512),
    }),
    { minLength: 1, maxLength: 40 },
  ),
});

test('the fast placer and the exhaustive place agree on every decision of a step, services with equal rules included', () => {
  fc.assert(
    fc.property(clusterArb, ({ nodes: ns, demands }) => {
      const mk = () => ns.map((n, i) => node(`n${i}`, { zone: n.zone, labels: n.ssd ? { disk: 'ssd' } : {}, taints: n.taint ? ['gpu'] : [], ready: n.ready, capacity: { cpuMillis: n.cpu, memoryBytes: n.mem * Gi } }));
      const shapes: Record<string, Demand['placement']> = {
        s1: { spread: ['zone', 'node'], require: [], restrict: [], prefer: [{ constraint: { attribute: 'label.disk', op: '==', values: ['ssd'] }, weight: 30 }], accept: [] },
        s2: { spread: ['node'], require: [{ attribute: 'zone', op: 'in', values: ['a', 'b'] }], restrict: [], prefer: [], accept: ['gpu'] },
        s3: { spread: [], require: [], restrict: [{ attribute: 'zone', op: '==', values: ['c'] }], prefer: [], accept: [] },
        // Services whose rules equal another's (the placer shares their static part): s1's in a
        // copy of their own, s3's very object.
        s4: { spread: ['zone', 'node'], require: [], restrict: [], prefer: [{ constraint: { attribute: 'label.disk', op: '==', values: ['ssd'] }, weight: 30 }], accept: [] },
      };
      shapes.s5 = shapes.s3!;
      const a = mk();
      const b = mk();
      const placer = createPlacer(b);
      const spreads = [new Map<string, Spread>(), new Map<string, Spread>()];
      for (const [i, d0] of demands.entries()) {
        const d: Demand = { replica: `r${i}`, service: d0.service, image: 'web:1', resources: { cpuMillis: d0.cpu, memoryBytes: d0.mem * 1024 ** 2 }, placement: shapes[d0.service]! };
        const results = [a, b].map((nodes, k) => {
          const sp = spreads[k]!.get(d.service) ?? { zone: new Map(), node: new Map() };
          spreads[k]!.set(d.service, sp);
          const r = k === 0 ? place(d, nodes, sp) : placer(d, sp);
          if (r.ok) {
            const t = nodes.find((n) => n.name === r.node)!;
            t.used = addResources(t.used, d.resources);
            (sp.zone as Map<string, number>).set(t.zone, (sp.zone.get(t.zone) ?? 0) + 1);
            (sp.node as Map<string, number>).set(t.name, (sp.node.get(t.name) ?? 0) + 1);
          }
          return r.ok ? r.node : r.shortfall;
        });
        expect(results[1]).toBe(results[0]);
      }
    }),
    { numRuns: 300 },
  );
});
