import { buildKey, decodeFact } from '../../core/keys.js';
import { QUORUM } from '../../core/model/quorum.js';
import { Rng } from './rng.js';
import { expectThat, result, web, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

/**
 * The quorum rule in the simulation (docs/fencing.md): agents register as the API does and
 * ask each other through the world's peer network (the real decision, agent/core/quorum.ts,
 * at both ends); the node controller expires leases by the rule. Throughout, the world
 * checks that no replacement starts while the replica it replaces still runs; each story
 * checks its own promise and the world converges after everything heals.
 */
const Gi = 1024 ** 3;

/** Where each replica runs, and since when: the simulation's "same pid". */
function runningSince(w: SimWorld): Map<string, string> {
  const out = new Map<string, string>();
  for (const [node, a] of w.agents) for (const r of a.runtime.alive()) out.set(r.replica, `${node}@${r.startedAt}`);
  return out;
}

async function state(w: SimWorld, node: string): Promise<string | undefined> {
  const kv = await w.store.get(buildKey('nodeStatus', node));
  return kv ? decodeFact('nodeStatus', kv.key, kv.value).state : undefined;
}

async function cluster(opts: SimOptions, n: number, replicas: number): Promise<{ w: SimWorld; nodes: string[] }> {
  const w = new SimWorld({ ...opts, quorum: true });
  const nodes = Array.from({ length: n }, (_, i) => `node${i + 1}`);
  for (const name of nodes) w.addNode({ name, zone: 'z', cpuMillis: 4_000, memoryBytes: 8 * Gi });
  // Every node ready first, so the replicas spread one per node.
  await w.runFor(5_000);
  await w.apply(web(replicas));
  await w.runFor(60_000);
  return { w, nodes };
}

const cutOff = (w: SimWorld, nodes: readonly string[], cut: boolean) => nodes.forEach((n) => w.partition(n, cut));

/** All server pods down for minutes: everyone cut off from the control plane, not from each other. Nothing stops, nothing moves. */
export async function simQuorumOutage(opts: SimOptions): Promise<ScenarioResult> {
  const { w, nodes } = await cluster(opts, 3, 3);
  const before = runningSince(w);
  expectThat(w, before.size === 3, 'three replicas running before the outage');
  const minutes = new Rng(opts.seed).int(2, 5);
  cutOff(w, nodes, true);
  const asked = w.stats.peerQuestions;
  await w.runFor(minutes * 60_000);
  expectThat(w, JSON.stringify([...runningSince(w)]) === JSON.stringify([...before]), `a ${minutes}-minute control-plane outage stopped nothing`);
  // Once confirmed, a node asks again only as its chain nears its end (QUORUM.reaskLeadMs), not every P.
  const questions = w.stats.peerQuestions - asked;
  const bound = nodes.length * (nodes.length - 1) * Math.ceil((minutes * 60_000) / (QUORUM.settleMs - QUORUM.reaskLeadMs) + 10);
  expectThat(w, questions <= bound, `the outage cost ${questions} peer questions, at most ${bound} expected`);
  cutOff(w, nodes, false);
  await w.runFor(60_000);
  expectThat(w, JSON.stringify([...runningSince(w)]) === JSON.stringify([...before]), 'the control plane returned and restarted nothing');
  for (const n of nodes) expectThat(w, (await state(w, n)) === 'ready', `${n} ready again under its tenure`);
  await w.checkQuiescent();
  return result('sim-quorum-outage', w, [`outage ${minutes} min, ${questions} peer questions`]);
}

/**
 * The pods return after minutes with their store down (a Postgres failover, a pool out of
 * connections): past every fence point, the agents' keepalives are answered "store down" for
 * a few seconds. That renews no lease, and must not undo the confirmed outage either: the
 * supervisors keep its deadline. Nothing stops, nothing moves.
 */
export async function simQuorumReturnStoreDown(opts: SimOptions): Promise<ScenarioResult> {
  const { w, nodes } = await cluster(opts, 3, 3);
  const before = runningSince(w);
  const rng = new Rng(opts.seed);
  const minutes = rng.int(1, 3);
  const downMs = rng.int(500, 15_000);
  cutOff(w, nodes, true);
  await w.runFor(minutes * 60_000);
  w.setStoreDown(true);
  cutOff(w, nodes, false);
  await w.runFor(downMs);
  w.setStoreDown(false);
  await w.runFor(60_000);
  expectThat(w, JSON.stringify([...runningSince(w)]) === JSON.stringify([...before]), `pods back after ${minutes} min with the store down for ${downMs} ms: nothing stopped or restarted`);
  for (const n of nodes) expectThat(w, (await state(w, n)) === 'ready', `${n} ready again under its tenure`);
  await w.checkQuiescent();
  return result('sim-quorum-return-store-down', w, [`outage ${minutes} min, store down ${downMs} ms on return`]);
}

/** One node cut off from everything: its peers reach the control plane, so it fences; its replica moves. */
export async function simQuorumIsolated(opts: SimOptions): Promise<ScenarioResult> {
  const { w, nodes } = await cluster(opts, 3, 3);
  const victim = nodes[new Rng(opts.seed).int(0, 2)]!;
  const onVictim = [...runningSince(w)].filter(([, at]) => at.startsWith(`${victim}@`)).map(([r]) => r);
  w.peerSplit([[victim], nodes.filter((n) => n !== victim)]);
  cutOff(w, [victim], true);
  await w.runFor(90_000);
  expectThat(w, w.agents.get(victim)!.runtime.alive().length === 0, `${victim}, cut off alone, fenced`);
  expectThat(w, (await state(w, victim)) === 'lost', `${victim} was expired`);
  const now = runningSince(w);
  expectThat(w, now.size === 3 && onVictim.every((r) => !now.has(r)), 'its replica was replaced on the others');
  w.peerSplit([nodes]);
  cutOff(w, [victim], false);
  await w.runFor(60_000);
  await w.checkQuiescent();
  return result('sim-quorum-isolated', w, [`isolated ${victim}`]);
}

/** A group cut off together (from the control plane and the rest): a minority fences and is replaced; a majority keeps running and is held. */
async function group(opts: SimOptions, size: number, name: string): Promise<ScenarioResult> {
  const { w, nodes } = await cluster(opts, 5, 5);
  const cut = new Rng(opts.seed).shuffle([...nodes]).slice(0, size);
  const rest = nodes.filter((n) => !cut.includes(n));
  const before = runningSince(w);
  w.peerSplit([cut, rest]);
  cutOff(w, cut, true);
  await w.runFor(120_000);
  const now = runningSince(w);
  const onCut = [...before].filter(([, at]) => cut.some((n) => at.startsWith(`${n}@`))).map(([r]) => r);
  if (size * 2 > nodes.length) {
    expectThat(w, onCut.every((r) => now.get(r) === before.get(r)), `a majority cut off together (${cut.join(' ')}) kept its replicas running`);
    for (const n of cut) expectThat(w, (await state(w, n)) === 'unreachable', `${n} is held unreachable, not lost`);
    expectThat(w, now.size === 5, 'nothing was replaced');
  } else {
    expectThat(w, cut.every((n) => w.agents.get(n)!.runtime.alive().length === 0), `a minority cut off together (${cut.join(' ')}) fenced`);
    for (const n of cut) expectThat(w, (await state(w, n)) === 'lost', `${n} was expired`);
    expectThat(w, now.size === 5 && onCut.every((r) => !now.has(r)), 'their replicas were replaced on the majority');
  }
  w.peerSplit([nodes]);
  cutOff(w, cut, false);
  await w.runFor(60_000);
  if (size * 2 > nodes.length) expectThat(w, JSON.stringify([...runningSince(w)]) === JSON.stringify([...before]), 'healed: nothing restarted');
  await w.checkQuiescent();
  return result(name, w, [`cut off ${cut.join(' ')}`]);
}

export const simQuorumMinority = (opts: SimOptions) => group(opts, 2, 'sim-quorum-minority');
export const simQuorumMajority = (opts: SimOptions) => group(opts, 3, 'sim-quorum-majority');

/** Flapping: nodes cut off and back at random, alone or with the control plane gone for all; invariants throughout, convergence after. */
export async function simQuorumFlapping(opts: SimOptions): Promise<ScenarioResult> {
  const { w, nodes } = await cluster(opts, 5, 5);
  const plan = new Rng(opts.seed ^ 0x9e37);
  for (let t = 0; t < 240_000; ) {
    const span = plan.int(2_000, 40_000);
    const who = plan.int(0, 3) === 0 ? nodes : plan.shuffle([...nodes]).slice(0, plan.int(1, 3));
    const split = plan.int(0, 1) === 0;
    if (split) w.peerSplit([who, nodes.filter((n) => !who.includes(n))]);
    cutOff(w, who, true);
    await w.runFor(span);
    cutOff(w, who, false);
    w.peerSplit([nodes]);
    t += span;
    const gap = plan.int(1_000, 20_000);
    await w.runFor(gap);
    t += gap;
  }
  await w.runFor(120_000);
  await w.checkQuiescent();
  expectThat(w, runningSince(w).size === 5, 'five replicas run after the flapping');
  return result('sim-quorum-flapping', w, []);
}
