import { buildKey, encodeFact, prefixOf } from '../../core/keys.js';
import type { NodeOp } from '../../core/model/facts.js';
import { rollBounds } from '../controllers/rollout-plan.js';
import { listFacts } from '../facts.js';
import { Rng } from './rng.js';
import { readyAt } from './story-rollout.js';
import { expectThat, result, running, web, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

const Gi = 1024 ** 3;
export const DRAIN_AVAILABILITY = 'drain-availability';
export const DRAIN_SURGE = 'drain-surge';

type Update = { maxSurge: number | string; maxUnavailable: number | string };
const UPDATES: readonly Update[] = [
  { maxSurge: 1, maxUnavailable: 0 },
  { maxSurge: 0, maxUnavailable: 1 },
  { maxSurge: '25%', maxUnavailable: '25%' },
  { maxSurge: 2, maxUnavailable: 0 },
];

/** An operator's intent as the API writes it (`cca node cordon|drain|uncordon`). */
async function nodeOp(w: SimWorld, node: string, op: Pick<NodeOp, 'cordoned' | 'drain'>): Promise<void> {
  await w.api.put(buildKey('nodeOp', node), encodeFact('nodeOp', { node, ...op, requestedBy: 'sim', at: w.t }));
  w.log(`${op.drain ? 'drain' : op.cordoned ? 'cordon' : 'uncordon'} ${node}`);
}

/**
 * sim-drain: six replicas of web (readiness after a seeded warm-up) over four nodes; a
 * seeded node is drained (update limits by seed: 1/0, 0/1, 25%/25%, 2/0). After every step
 * and agent tick, from the drain on: the replicas ready as the store shows them never fall
 * below desired − max unavailable, and live ones never exceed desired + max surge. The
 * story checks every replica left the node, all six run and are ready elsewhere, and a
 * scale-up places nothing on the drained (cordoned) node until it is uncordoned.
 */
export async function simDrain(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const story = new Rng(opts.seed * 2_246_822_519);
  const update = story.pick(UPDATES);
  const spec = (replicas: number) => web(replicas, {
    health: { readiness: { probe: { type: 'exec', command: ['ready'] }, intervalMs: 1_000, timeoutMs: 500 } },
    update: { ...update, progressDeadlineMs: 60_000 },
  });
  const { minReady, maxLive } = rollBounds(update, 6);
  const nodes = ['node1', 'node2', 'node3', 'node4'];
  for (const [i, name] of nodes.entries()) w.addNode({ name, zone: 'ab'[i % 2]!, cpuMillis: 2_000, memoryBytes: 4 * Gi });
  const warmup = story.int(1_000, 5_000);
  for (const a of w.agents.values()) {
    a.readiness = (x) => {
      const started = a.runtime.workloads.get(x.replica)?.startedAt ?? w.t;
      return w.t - started >= warmup ? 'passing' : 'unknown';
    };
  }
  let draining = false;
  let fewest = Infinity;
  let most = 0;
  w.addCheck(DRAIN_AVAILABILITY, async () => {
    if (!draining) return [];
    const ready = (await readyAt(w.store, 'web', await w.store.revision())).size;
    fewest = Math.min(fewest, ready);
    return ready < minReady ? [`${ready} replica(s) of web ready during the drain, below 6 − max unavailable = ${minReady}`] : [];
  });
  const drainStops = new Set<string>();
  w.addCheck(DRAIN_SURGE, async () => {
    if (!draining) return [];
    const records = await listFacts(w.store, 'replica', prefixOf('replica', 'web'));
    for (const r of records) if (r.value.desired === 'stop' && r.value.drained) drainStops.add(r.value.id);
    const live = records.filter((r) => r.value.desired === 'run' && !r.value.retired).length;
    most = Math.max(most, live);
    return live > maxLive ? [`${live} live replicas of web during the drain, above 6 + max surge = ${maxLive}`] : [];
  });
  await w.runFor(3_000);
  await w.apply(spec(6));
  await w.runFor(30_000);
  expectThat(w, (await running(w, 'web')).length === 6, 'six replicas running before the drain');
  const ready = await readyAt(w.store, 'web', await w.store.revision());
  expectThat(w, ready.size === 6, `six ready before the drain (${ready.size})`);
  // The node with the most replicas of web (ties: the seed's pick), so the drain moves several.
  const counts = nodes.map((n) => [n, w.agents.get(n)!.runtime.alive().filter((r) => r.service === 'web').length] as const);
  const most0 = Math.max(...counts.map(([, c]) => c));
  const victim = story.pick(counts.filter(([, c]) => c === most0).map(([n]) => n));
  w.at(w.t + story.int(0, 3_000), `drain ${victim}`, async () => {
    draining = true;
    await nodeOp(w, victim, { cordoned: true, drain: true });
  });
  await w.runFor(60_000);
  const left = w.agents.get(victim)!.runtime.alive().filter((r) => r.service === 'web');
  expectThat(w, left.length === 0, `every replica left ${victim} (${left.length} still run there)`);
  expectThat(w, (await running(w, 'web')).length === 6, 'six replicas running after the drain');
  expectThat(w, (await readyAt(w.store, 'web', await w.store.revision())).size === 6, 'six ready after the drain');
  const drained = drainStops.size;
  expectThat(w, drained === most0, `the drain stopped the ${most0} replica(s) on ${victim} itself (${drained})`);
  draining = false;

  await w.apply(spec(8));
  await w.runFor(30_000);
  expectThat(w, (await listFacts(w.store, 'assigned', prefixOf('assigned', victim))).length === 0, `the cordoned ${victim} took none of the scale-up`);
  expectThat(w, (await running(w, 'web')).length === 8, 'eight running elsewhere');
  await nodeOp(w, victim, { cordoned: false, drain: false });
  await w.apply(spec(10));
  await w.runFor(30_000);
  expectThat(w, (await listFacts(w.store, 'assigned', prefixOf('assigned', victim))).length > 0, `uncordoned, ${victim} takes placements again`);
  await w.runFor(10_000);
  await w.checkQuiescent();
  return result('sim-drain', w, [`surge ${update.maxSurge}, unavailable ${update.maxUnavailable}; warm-up ${warmup} ms; drained ${most0} from ${victim}; fewest ready ${fewest} (bound ${minReady}); most live ${most} (bound ${maxLive})`]);
}
