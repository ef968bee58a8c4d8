import { faultText, simC0, simC1, simRandom, type ScenarioResult } from './scenarios.js';
import { simAutoscale } from './story-autoscale.js';
import { simNetwork } from './story-network.js';
import { simOrdering } from './story-ordering.js';
import { simEndpoints, simEndpointsRandom } from './story-endpoints.js';
import type { SimOptions } from './world.js';
import { simVolumes } from './story-volumes.js';
import { simRollout } from './story-rollout.js';
import { simDrain } from './story-drain.js';
import { simQuorumFlapping, simQuorumIsolated, simQuorumMajority, simQuorumMinority, simQuorumOutage, simQuorumReturnStoreDown } from './story-quorum.js';

/**
 * The fixed stories, by name. One entry per line: service-lifecycle scenarios (endpoints,
 * rollouts, autoscaling, ordering, volumes, network) each live in their own module.
 */
const stories: Record<string, (opts: SimOptions) => Promise<ScenarioResult>> = {
  'sim-c0': simC0,
  'sim-c1': simC1,
  'sim-autoscale': simAutoscale,
  'sim-network': simNetwork,
  'sim-volumes': simVolumes,
  'sim-rollout': simRollout,
  'sim-drain': simDrain,
  'sim-quorum-outage': simQuorumOutage,
  'sim-quorum-return-store-down': simQuorumReturnStoreDown,
  'sim-quorum-isolated': simQuorumIsolated,
  'sim-quorum-minority': simQuorumMinority,
  'sim-quorum-majority': simQuorumMajority,
  'sim-quorum-flapping': simQuorumFlapping,
  'sim-ordering': simOrdering,
  'sim-endpoints': simEndpoints,
  'sim-endpoints-random': simEndpointsRandom,
};

export type ScenarioName = string;

export function scenarioNames(): string[] {
  return [...Object.keys(stories), 'random', 'random-quorum'];
}

export async function runScenario(name: ScenarioName, opts: SimOptions, only?: readonly number[]): Promise<ScenarioResult> {
  if (name === 'random') return simRandom(opts, only);
  // The same random faults with the quorum rule on both sides (docs/fencing.md).
  if (name === 'random-quorum') return { ...(await simRandom({ ...opts, quorum: true }, only)), scenario: 'random-quorum' };
  const story = stories[name];
  if (!story) throw new Error(`unknown scenario ${name}; known: ${scenarioNames().join(', ')}`);
  return story(opts);
}

export interface Summary {
  runs: number;
  failed: ScenarioResult[];
  steps: number;
  agentTicks: number;
  ms: number;
}

/**
 * Run seeds [first, first + count): each seed runs sim-c0, sim-c1 and one randomized
 * schedule. `now` is only for reporting elapsed time.
 */
export async function runSeeds(first: number, count: number, now: () => number, onResult?: (r: ScenarioResult) => void): Promise<Summary> {
  const started = now();
  const summary: Summary = { runs: 0, failed: [], steps: 0, agentTicks: 0, ms: 0 };
  for (let seed = first; seed < first + count; seed++) {
    for (const name of ['sim-c0', 'sim-c1', 'random', 'random-quorum'] as const) {
      // The fixed scenarios are deterministic stories; a few seeds vary their interleavings enough.
      if (!name.startsWith('random') && seed - first >= 10) continue;
      const r = await runScenario(name, { seed, traceLimit: 4_000 });
      summary.runs++;
      summary.steps += r.stats.steps;
      summary.agentTicks += r.stats.agentTicks;
      if (!r.ok) summary.failed.push(r);
      onResult?.(r);
    }
  }
  summary.ms = now() - started;
  return summary;
}

/**
 * The shortest schedule that still fails: drop faults one at a time while the failure
 * (the same invariant) remains. Replay with `--seed N --faults i,j,…`.
 */
export async function shrink(r: ScenarioResult): Promise<{ result: ScenarioResult; keep: number[] }> {
  const all = r.faults ?? [];
  let keep = all.map((_, i) => i);
  let best = r;
  const invariant = r.violations[0]?.invariant;
  for (let i = keep.length - 1; i >= 0; i--) {
    const trial = keep.filter((k) => k !== keep[i]);
    const t = await runScenario(r.scenario === 'random-quorum' ? 'random-quorum' : 'random', { seed: r.seed }, trial);
    if (!t.ok && t.violations[0]?.invariant === invariant) {
      keep = trial;
      best = { ...t, faults: all };
    }
  }
  return { result: best, keep };
}

export function describeFailure(r: ScenarioResult, keep?: number[]): string {
  const lines = [`FAILED ${r.scenario} seed=${r.seed}`];
  for (const v of r.violations) lines.push(`  ${v.invariant} at ${(v.at / 1000).toFixed(3)}s: ${v.detail}`);
  if (r.faults) {
    const kept = keep ?? r.faults.map((_, i) => i);
    lines.push(`  faults: ${kept.map((i) => `#${i} ${faultText(r.faults![i]!)}`).join('; ') || '(none needed)'}`);
  }
  const replay = r.scenario === 'random' ? `--seed ${r.seed}${keep ? ` --faults ${keep.join(',') || 'none'}` : ''}` : `--scenario ${r.scenario} --seed ${r.seed}`;
  lines.push(`  replay: npm run sim -- ${replay} --trace`);
  return lines.join('\n');
}
