import { buildKey, prefixOf } from '../../core/keys.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import { templateHash } from '../../core/model/template.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import type { Store } from '../../db/store.js';
import { rollBounds } from '../controllers/rollout-plan.js';
import { decisionKey } from '../decisions/record.js';
import { getFact, listFacts } from '../facts.js';
import { Rng } from './rng.js';
import { expectThat, result, running, web, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

const Gi = 1024 ** 3;
export const ROLLOUT_AVAILABILITY = 'rollout-availability';
export const ROLLOUT_SURGE = 'rollout-surge';

/**
 * Replicas of a service that are ready at a revision, as the store shows it: live, placed,
 * the node registered under the placement's tenure and ready for it, the assignment and
 * the agent's observation under that tenure, running and passing readiness (or running,
 * without a readiness check). Written apart from the controllers' own reading on purpose.
 */
export async function readyAt(store: Store, service: string, revision: number): Promise<Set<string>> {
  const [records, placements, observed, assigned, statuses] = await Promise.all([
    listFacts(store, 'replica', prefixOf('replica', service), revision),
    listFacts(store, 'placement', prefixOf('placement'), revision),
    listFacts(store, 'observed', prefixOf('observed'), revision),
    listFacts(store, 'assigned', prefixOf('assigned'), revision),
    listFacts(store, 'nodeStatus', prefixOf('nodeStatus'), revision),
  ]);
  const placement = new Map(placements.map((p) => [p.value.replica, p.value]));
  const obs = new Map(observed.map((o) => [`${o.value.node}/${o.value.replica}`, o.value]));
  const assignment = new Map(assigned.map((a) => [`${a.value.node}/${a.value.replica}`, a.value]));
  const status = new Map(statuses.map((s) => [s.value.node, s.value]));
  const ready = new Set<string>();
  for (const { value: r } of records) {
    if (r.desired !== 'run' || r.retired) continue;
    const p = placement.get(r.id);
    if (!p) continue;
    const node = await store.get(buildKey('node', p.node), { revision });
    const st = status.get(p.node);
    const a = assignment.get(`${p.node}/${r.id}`);
    const o = obs.get(`${p.node}/${r.id}`);
    if (!node || node.createRevision !== p.tenure || st?.state !== 'ready' || st.tenure !== p.tenure) continue;
    if (!a || a.tenure !== p.tenure || !o || o.tenure !== p.tenure || o.state !== 'running') continue;
    if (a.spec.health.readiness !== undefined && o.health.readiness !== 'passing') continue;
    ready.add(r.id);
  }
  return ready;
}

export interface BoundStats {
  /** Replicas the roll stopped of its own accord (not lost, not exited). */
  voluntaryStops: number;
  /** Of those, ones that were ready just before their stop. */
  readyStops: number;
  /** The fewest ready replicas right after a voluntary stop of a ready one, and the bound then. */
  minReadyAfter: number;
  boundThen: number;
  maxLive: number;
}

/**
 * The availability bound of a rolling update, checked after every step: whenever the
 * replica controller voluntarily stops a replica that was ready (its stop decision's
 * revision R), the replicas ready at R — as the store shows them — are at least
 * desired − max unavailable. A node lost on its own may take ready replicas below that; that
 * is no stop of the controller's, and the controller then stops no ready replica until the
 * count is back. Also: live replicas never exceed desired + max surge.
 */
export function checkAvailabilityBound(w: SimWorld, service: string): BoundStats {
  const stats: BoundStats = { voluntaryStops: 0, readyStops: 0, minReadyAfter: Infinity, boundThen: 0, maxLive: 0 };
  const seen = new Set<string>();
  w.addCheck(ROLLOUT_AVAILABILITY, async () => {
    const out: string[] = [];
    for (const rec of await listFacts(w.store, 'replica', prefixOf('replica', service))) {
      const r = rec.value;
      if (r.stopBy?.by !== 'rollout' || r.stopRequestedAt === undefined || seen.has(r.id)) continue;
      seen.add(r.id);
      stats.voluntaryStops++;
      const d = await w.store.get(decisionKey('replica', r.id, r.stopRequestedAt, 'rc-stop'));
      if (!d) {
        out.push(`${r.id} was stopped by the roll without its stop decision`);
        continue;
      }
      const at = d.createRevision;
      if (!(await readyAt(w.store, service, at - 1)).has(r.id)) continue;
      stats.readyStops++;
      const spec = await w.store.get(buildKey('service', service), { revision: at });
      if (!spec) continue;
      const s = serviceSpecSchema.parse(JSON.parse(spec.value));
      const bound = rollBounds(s.update, s.replicas).minReady;
      const after = (await readyAt(w.store, service, at)).size;
      if (after < stats.minReadyAfter) {
        stats.minReadyAfter = after;
        stats.boundThen = bound;
      }
      if (after < bound) out.push(`the roll stopped ready replica ${r.id} at revision ${at}, leaving ${after} ready, below ${s.replicas} − max unavailable = ${bound}`);
    }
    return out;
  });
  w.addCheck(ROLLOUT_SURGE, async () => {
    const spec = await getFact(w.store, 'service', service);
    if (!spec) return [];
    const live = (await listFacts(w.store, 'replica', prefixOf('replica', service))).filter((r) => r.value.desired === 'run' && !r.value.retired).length;
    stats.maxLive = Math.max(stats.maxLive, live);
    const max = rollBounds(spec.value.update, spec.value.replicas).maxLive;
    return live > max ? [`${service} has ${live} live replicas, above ${spec.value.replicas} + max surge = ${max}`] : [];
  });
  return stats;
}

type Update = { maxSurge: number | string; maxUnavailable: number | string };
/** The update settings a seed rolls with: percentages, the defaults, stop-first, a wide surge. */
const UPDATES: readonly Update[] = [
  { maxSurge: '25%', maxUnavailable: '25%' },
  { maxSurge: 1, maxUnavailable: 0 },
  { maxSurge: 0, maxUnavailable: 1 },
  { maxSurge: 3, maxUnavailable: '34%' },
];

const specOf = (update: Update) => (version: string): ServiceSpecInput =>
  web(6, {
    env: { VERSION: version },
    health: { readiness: { probe: { type: 'exec', command: ['ready'] }, intervalMs: 1_000, timeoutMs: 500 } },
    update: { ...update, progressDeadlineMs: 30_000 },
  });

async function rolloutOf(w: SimWorld) {
  return (await getFact(w.store, 'rollout', 'web'))?.value;
}

async function liveOf(w: SimWorld) {
  return (await listFacts(w.store, 'replica', prefixOf('replica', 'web'))).map((r) => r.value).filter((r) => r.desired === 'run' && !r.retired);
}

/**
 * sim-rollout: six replicas over four zones roll v1 → v2 (surge and unavailable by seed:
 * 25%/25%, 1/0, 0/1 or 3/34%) while a node, picked by the seed, is lost at a seeded moment of the roll (power off,
 * partition or agent killed, by seed) and comes back 40 s later; then v3, whose readiness never passes, gets stuck and pauses; applying
 * v2 again rolls back, keeping the v2 replicas. The availability and surge bounds are
 * checked after every step.
 */
export async function simRollout(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const story = new Rng(opts.seed * 2_654_435_761);
  const notes: string[] = [];
  const update = story.pick(UPDATES);
  const spec = specOf(update);
  const templateOf = (version: string) => templateHash(serviceSpecSchema.parse(spec(version)));
  const { minReady } = rollBounds(update, 6);
  const nodes = ['node1', 'node2', 'node3', 'node4'];
  for (const [i, name] of nodes.entries()) w.addNode({ name, zone: 'abcd'[i]!, cpuMillis: 1_000, memoryBytes: 4 * Gi });
  const stats = checkAvailabilityBound(w, 'web');
  // A replica passes readiness a seeded 2–6 s after it starts (v3 never does), so a roll
  // takes several waves and the machine loss below falls inside it.
  const warmup = story.int(2_000, 6_000);
  for (const a of w.agents.values()) {
    a.readiness = (x) => {
      if (x.spec.env.VERSION === '3') return 'failing';
      const started = a.runtime.workloads.get(x.replica)?.startedAt ?? w.t;
      return w.t - started >= warmup ? 'passing' : 'unknown';
    };
  }
  await w.runFor(3_000);
  await w.apply(spec('1'));
  await w.runFor(20_000);
  expectThat(w, (await running(w, 'web')).length === 6, 'v1: 6 replicas running');

  const victim = story.pick(nodes);
  const lossAt = w.t + story.int(0, 12_000);
  // How the node is lost, by seed: its machine powers off, it is cut off from the control
  // plane (it fences its own workloads), or its agent dies (the supervisor fences them).
  const fault = story.pick(['power-off', 'partition', 'agent-kill'] as const);
  const [lose, back] =
    fault === 'power-off' ? [() => w.powerOff(victim), () => w.powerOn(victim)]
    : fault === 'partition' ? [() => w.partition(victim, true), () => w.partition(victim, false)]
    : [() => w.killAgent(victim), () => w.restartAgent(victim)];
  w.at(lossAt, `${fault} ${victim}`, lose);
  w.at(lossAt + 40_000, `${victim} back`, back);
  const rollAt = w.t;
  await w.apply(spec('2'));
  await w.runFor(90_000);
  let ro = await rolloutOf(w);
  expectThat(w, ro?.state === 'complete' && ro.toTemplate === templateOf('2'), `v2 rolled out despite ${fault} of ${victim} ${((lossAt - rollAt) / 1000).toFixed(1)} s into the roll (rollout ${ro?.state})`);
  const v2 = await liveOf(w);
  expectThat(w, v2.length === 6 && v2.every((r) => r.template === templateOf('2')), 'every live replica runs v2');
  expectThat(w, (await running(w, 'web')).length === 6, 'v2: 6 replicas running');
  expectThat(w, stats.voluntaryStops > 0, `the roll stopped old replicas itself (${stats.voluntaryStops}, ${stats.readyStops} of them ready)`);

  await w.apply(spec('3'));
  await w.runFor(45_000);
  ro = await rolloutOf(w);
  expectThat(w, ro?.state === 'stuck' && /^\d\/6 new replicas not ready: readiness failing on node\d/.test(ro.reason), `v3 is stuck with the reason: ${ro?.reason}`);
  const kept = (await liveOf(w)).filter((r) => r.template === templateOf('2')).map((r) => r.id);
  expectThat(w, kept.length >= minReady, `paused with ${kept.length} v2 replicas serving (at least ${minReady})`);
  await w.runFor(30_000);
  expectThat(w, JSON.stringify((await liveOf(w)).filter((r) => r.template === templateOf('2')).map((r) => r.id)) === JSON.stringify(kept), 'a stuck roll stays paused');

  await w.apply(spec('2'));
  await w.runFor(40_000);
  ro = await rolloutOf(w);
  const after = await liveOf(w);
  expectThat(w, ro?.state === 'complete' && ro.toTemplate === templateOf('2') && ro.fromTemplate === templateOf('3'), 'applying v2 again rolls back');
  expectThat(w, after.length === 6 && kept.every((id) => after.some((r) => r.id === id)) && after.every((r) => r.template === templateOf('2')), 'the rollback kept the v2 replicas that were still there');
  await w.runFor(20_000);
  await w.checkQuiescent();
  notes.push(
    `surge ${update.maxSurge}, unavailable ${update.maxUnavailable}; warm-up ${warmup} ms; voluntary stops ${stats.voluntaryStops} (${stats.readyStops} ready); fewest ready after one: ${stats.minReadyAfter === Infinity ? '-' : stats.minReadyAfter} (bound ${stats.boundThen}); most live: ${stats.maxLive}; ${fault} of ${victim}`,
  );
  return result('sim-rollout', w, notes);
}
