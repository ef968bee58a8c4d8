import { buildKey, prefixOf } from '../../core/keys.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import { listFacts } from '../facts.js';
import { why, whyText } from '../decisions/why.js';
import { Rng } from './rng.js';
import { SimWorld, type SimOptions } from './world.js';

const Mi = 1024 ** 2;
const Gi = 1024 ** 3;

export interface ScenarioResult {
  scenario: string;
  seed: number;
  ok: boolean;
  violations: SimWorld['violations'];
  trace: string[];
  stats: SimWorld['stats'];
  /** The faults the run injected (random schedules), for shrinking and replay. */
  faults?: Fault[];
  notes: string[];
}

/** A check a scenario makes about its own story; a failed one is a violation like any other. */
export function expectThat(w: SimWorld, ok: boolean, what: string): void {
  if (w.violations.length > 0) return; // the story stopped at the first failure
  if (!ok) w.violate(`scenario: ${what}`, what);
  else w.log(`ok: ${what}`);
}

export async function running(w: SimWorld, service: string): Promise<string[]> {
  const out: string[] = [];
  for (const a of w.agents.values()) for (const r of a.runtime.alive()) if (r.service === service) out.push(r.replica);
  return out.sort();
}

async function runningOn(w: SimWorld, node: string): Promise<string[]> {
  return (w.agents.get(node)?.runtime.alive() ?? []).map((r) => r.replica).sort();
}

export const web = (replicas: number, extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'web',
  image: 'web:1',
  replicas,
  resources: { cpuMillis: 250, memoryBytes: 256 * Mi },
  stopGraceMs: 2_000,
  ...extra,
});

/** sim-c0: one node — apply, kill a replica, scale, an unknown image, restarts, the store down. */
export async function simC0(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const notes: string[] = [];
  w.addNode({ name: 'node1', zone: 'a', cpuMillis: 4_000, memoryBytes: 8 * Gi });
  await w.apply(web(2));
  await w.runFor(15_000);
  const first = await running(w, 'web');
  expectThat(w, first.length === 2, 'apply: 2 web replicas running');

  const victim = first[0];
  if (victim) w.crashReplica(victim, 137);
  await w.runFor(10_000);
  const second = await running(w, 'web');
  expectThat(w, second.length === 2 && !second.includes(victim ?? ''), 'a killed replica is replaced with a new id');
  const replacement = second.find((r) => !first.includes(r));
  if (replacement) {
    const a = await why(w.store, 'replica', replacement);
    notes.push(whyText(a));
    expectThat(w, a.complete && a.chain.some((l) => l.decision.subject === victim), `why replica ${replacement} is complete and reaches ${victim}'s exit`);
  }

  await w.scale('web', 4);
  await w.runFor(10_000);
  expectThat(w, (await running(w, 'web')).length === 4, 'scale up to 4');
  await w.scale('web', 1);
  await w.runFor(15_000);
  expectThat(w, (await running(w, 'web')).length === 1, 'scale down to 1');

  await w.apply({ name: 'ghost', image: 'ghost:1', replicas: 1 });
  await w.runFor(10_000);
  const ghosts = await listFacts(w.store, 'replica', prefixOf('replica', 'ghost'));
  const g = ghosts[0]?.value.id;
  const gw = g ? await why(w.store, 'replica', g) : undefined;
  if (gw) notes.push(whyText(gw));
  expectThat(w, !!gw && gw.history[0]!.decision.action === 'pending' && gw.history[0]!.decision.reasons.some((r) => r.includes('ghost:1')), 'an unknown image is held pending with the reason');
  expectThat(w, (await running(w, 'web')).length === 1, 'the rest of the system is unaffected by the unknown image');

  const before = await running(w, 'web');
  w.killAgent('node1');
  await w.runFor(3_000);
  w.restartAgent('node1');
  await w.runFor(10_000);
  expectThat(w, JSON.stringify(await running(w, 'web')) === JSON.stringify(before), 'an agent restart re-adopts its workloads: same ids, no restarts');

  w.setStoreDown(true);
  await w.runFor(10_000);
  expectThat(w, JSON.stringify(await running(w, 'web')) === JSON.stringify(before), 'workloads keep running while the store is down');
  w.setStoreDown(false);
  await w.runFor(20_000);
  expectThat(w, w.diagnostics.filter((d) => d.code === 'CCA-E0403').length === 1, 'the failing store is reported once');
  expectThat(w, JSON.stringify(await running(w, 'web')) === JSON.stringify(before), 'nothing restarted after the store returned');
  await w.runFor(20_000);
  await w.checkQuiescent();
  return result('sim-c0', w, notes);
}

/** sim-c1: three nodes in zones a/b/c, six replicas; node3's agent killed; node2 partitioned. */
export async function simC1(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const notes: string[] = [];
  for (const [i, zone] of ['a', 'b', 'c'].entries()) w.addNode({ name: `node${i + 1}`, zone, cpuMillis: 2_000, memoryBytes: 4 * Gi });
  await w.runFor(3_000); // the agents register first, as in the demo
  await w.apply(web(6));
  await w.runFor(20_000);
  const perNode = async () => Promise.all(['node1', 'node2', 'node3'].map((n) => runningOn(w, n)));
  const spread = await perNode();
  expectThat(w, spread.every((l) => l.length === 2), 'six replicas spread two per zone');

  const onNode3 = spread[2] ?? [];
  w.killAgent('node3');
  await w.runFor(25_000);
  const after = await running(w, 'web');
  expectThat(w, after.length === 6 && onNode3.every((r) => !after.includes(r)), "node3's replicas are replaced with new ids");
  expectThat(w, (await perNode())[2]!.length === 0, "node3's workloads were fenced by its supervisor");
  const nw = await why(w.store, 'node', 'node3');
  notes.push(whyText(nw));
  expectThat(w, nw.complete && nw.chain[0]!.decision.action === 'lost' && nw.chain[0]!.decision.reasons[0]!.includes('lease'), 'why node node3 shows the chain from the lease expiry');

  w.restartAgent('node3');
  await w.runFor(15_000);
  const placedOn3 = await listFacts(w.store, 'assigned', prefixOf('assigned', 'node3'));
  expectThat(w, placedOn3.length === 0 && JSON.stringify(await running(w, 'web')) === JSON.stringify(after), 'node3 returns: nothing moves back');

  w.partition('node2', true);
  await w.runFor(30_000);
  expectThat(w, (await runningOn(w, 'node2')).length === 0, 'partitioned node2 fenced its own workloads');
  expectThat(w, (await running(w, 'web')).length === 6, 'replacements run elsewhere');
  w.partition('node2', false);
  await w.runFor(30_000);
  await w.checkQuiescent();
  const node2 = await w.store.get(buildKey('nodeStatus', 'node2'));
  notes.push(`node2 status after the partition: ${node2?.value ?? 'none'}`);
  return result('sim-c1', w, notes);
}

export type Fault =
  | { at: number; kind: 'crash'; service: string; code: number }
  | { at: number; kind: 'agent-restart'; node: string; down: number }
  | { at: number; kind: 'power-cycle'; node: string; down: number }
  | { at: number; kind: 'partition'; node: string; down: number }
  | { at: number; kind: 'store-outage'; down: number }
  | { at: number; kind: 'skew'; node: string; ms: number }
  | { at: number; kind: 'failing-kills'; node: string; n: number }
  | { at: number; kind: 'scale'; service: string; replicas: number }
  | { at: number; kind: 'corrupt-allocation'; node: string };

interface RandomCluster {
  nodes: { name: string; zone: string; cpuMillis: number; memoryBytes: number; labels: Record<string, string>; taints: string[] }[];
  services: ServiceSpecInput[];
}

/** Every fault heals by this time; the world then settles before the liveness checks. */
const HEAL_BY = 100_000;
const SETTLE = 60_000;

export function randomCluster(rng: Rng): RandomCluster {
  const zones = ['a', 'b', 'c'];
  const nodes = Array.from({ length: rng.int(2, 5) }, (_, i) => ({
    name: `node${i + 1}`,
    zone: zones[i % 3]!,
    cpuMillis: rng.pick([1_000, 2_000, 4_000]),
    memoryBytes: rng.pick([2, 4, 8]) * Gi,
    labels: (rng.chance(0.5) ? { disk: 'ssd' } : {}) as Record<string, string>,
    taints: i > 0 && rng.chance(0.2) ? ['dedicated=db'] : [],
  }));
  const images = ['web:1', 'api:1', 'worker:1'];
  const services: ServiceSpecInput[] = Array.from({ length: rng.int(1, 3) }, (_, i) => {
    const s: ServiceSpecInput = {
      name: `svc${i + 1}`,
      image: rng.pick(images),
      replicas: rng.int(1, 4),
      resources: { cpuMillis: rng.pick([100, 250, 500]), memoryBytes: rng.pick([128, 256, 512]) * Mi },
      restart: rng.pick(['always', 'always', 'on-failure'] as const),
      stopGraceMs: rng.int(1, 5) * 1_000,
    };
    if (i % 3 === 0 && rng.chance(0.7)) {
      s.placement = rng.pick([
        { require: [{ attribute: 'zone', op: 'in' as const, values: ['a', 'b'] }] },
        { prefer: [{ constraint: { attribute: 'label.disk', op: '==' as const, values: ['ssd'] }, weight: 50 }] },
        { restrict: [{ attribute: 'node', op: '==' as const, values: ['node1'] }] },
        { accept: ['dedicated=db'] },
      ]);
    }
    return s;
  });
  return { nodes, services };
}

export function randomFaults(rng: Rng, cluster: RandomCluster): Fault[] {
  const node = () => rng.pick(cluster.nodes).name;
  const service = () => rng.pick(cluster.services).name;
  const faults: Fault[] = [];
  for (let i = rng.int(0, 10); i > 0; i--) {
    const at = rng.int(15, 80) * 1_000;
    const kind = rng.pick(['crash', 'agent-restart', 'power-cycle', 'partition', 'store-outage', 'skew', 'failing-kills', 'scale', 'corrupt-allocation'] as const);
    switch (kind) {
      case 'crash': faults.push({ at, kind, service: service(), code: rng.pick([0, 1, 137]) }); break;
      case 'agent-restart': faults.push({ at, kind, node: node(), down: rng.int(1, 20) * 1_000 }); break;
      case 'power-cycle': faults.push({ at, kind, node: node(), down: rng.int(5, 20) * 1_000 }); break;
      case 'partition': faults.push({ at, kind, node: node(), down: rng.int(3, 20) * 1_000 }); break;
      case 'store-outage': faults.push({ at, kind, down: rng.int(2, 15) * 1_000 }); break;
      case 'skew': faults.push({ at, kind, node: node(), ms: rng.int(-5, 5) * 1_000 }); break;
      case 'failing-kills': faults.push({ at, kind, node: node(), n: rng.int(1, 2) }); break;
      case 'scale': faults.push({ at, kind, service: service(), replicas: rng.int(0, 5) }); break;
      case 'corrupt-allocation': faults.push({ at, kind, node: node() }); break;
    }
  }
  return faults.sort((a, b) => a.at - b.at);
}

export function faultText(f: Fault): string {
  const { at, kind, ...rest } = f;
  return `${(at / 1000).toFixed(0)}s ${kind} ${Object.entries(rest).map(([k, v]) => `${k}=${v}`).join(' ')}`;
}

function scheduleFault(w: SimWorld, f: Fault): void {
  const until = (d: number) => Math.min(f.at + d, HEAL_BY);
  switch (f.kind) {
    case 'crash':
      w.at(f.at, 'fault', async () => {
        const ids = await running(w, f.service);
        if (ids.length > 0) w.crashReplica(w.rng.pick(ids), f.code);
      });
      break;
    case 'agent-restart':
      w.at(f.at, 'fault', () => w.killAgent(f.node));
      w.at(until(f.down), 'heal', () => w.restartAgent(f.node));
      break;
    case 'power-cycle':
      w.at(f.at, 'fault', () => w.powerOff(f.node));
      w.at(until(f.down), 'heal', () => w.powerOn(f.node));
      break;
    case 'partition':
      w.at(f.at, 'fault', () => w.partition(f.node, true));
      w.at(until(f.down), 'heal', () => w.partition(f.node, false));
      break;
    case 'store-outage':
      w.at(f.at, 'fault', () => w.setStoreDown(true));
      w.at(until(f.down), 'heal', () => w.setStoreDown(false));
      break;
    case 'skew':
      w.at(f.at, 'fault', () => w.skew(f.node, f.ms));
      break;
    case 'failing-kills':
      w.at(f.at, 'fault', () => w.failKills(f.node, f.n));
      break;
    case 'scale':
      w.at(f.at, 'fault', () => w.scale(f.service, f.replicas));
      break;
    case 'corrupt-allocation':
      w.at(f.at, 'fault', () => (w.storeDown ? undefined : w.corruptAllocation(f.node)));
      // The operator reads the finding and asks for the repair a little later.
      w.at(f.at + 5_000, 'operator', async () => {
        if (!w.storeDown) await w.requestRepair(f.node);
      });
      break;
  }
}

/**
 * A randomized schedule from the seed; `only` keeps a subset of its faults (shrinking,
 * replay); `setup` lets a story add its own checks to the world before it runs.
 */
export async function simRandom(opts: SimOptions, only?: readonly number[], setup?: (w: SimWorld) => void): Promise<ScenarioResult> {
  const plan = new Rng(opts.seed ^ 0x5eed);
  const cluster = randomCluster(plan);
  const all = randomFaults(plan, cluster);
  const faults = only ? all.filter((_, i) => only.includes(i)) : all;
  const w = new SimWorld(opts);
  setup?.(w);
  for (const n of cluster.nodes) w.addNode(n);
  for (const s of cluster.services) await w.apply(s);
  for (const f of faults) scheduleFault(w, f);
  w.at(HEAL_BY, 'heal all', () => {
    for (const n of cluster.nodes) {
      w.partition(n.name, false);
      const a = w.agents.get(n.name)!;
      if (!a.alive) w.restartAgent(n.name);
    }
    w.healStore();
  });
  // A repair request left from an earlier finding that reopened: the operator asks again.
  w.at(HEAL_BY + 20_000, 'operator', async () => {
    for (const n of cluster.nodes) await w.requestRepair(n.name);
  });
  await w.runUntil(HEAL_BY + SETTLE);
  await w.checkQuiescent();
  const r = result('random', w, []);
  r.faults = all;
  return r;
}

export function result(scenario: string, w: SimWorld, notes: string[]): ScenarioResult {
  return { scenario, seed: w.opts.seed, ok: w.violations.length === 0, violations: w.violations, trace: w.trace, stats: w.stats, notes };
}

export const scenarios = { 'sim-c0': simC0, 'sim-c1': simC1 } as const;
