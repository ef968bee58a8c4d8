/**
 * `npm run sim` (tsx jobs/sim/cli.ts): the Node entry of the simulation. The simulation
 * itself is browser-safe; only this file touches the process.
 *
 *   --seeds N           run N seeds (from --from, default 1) and print a summary
 *   --seed N            run one seed (the random schedule unless --scenario is given)
 *   --scenario NAME     sim-c0, sim-c1 or random
 *   --faults i,j        with --seed: keep only these faults of the random schedule (replay a shrunk run)
 *   --trace             print the full trace of a single run
 */
import { describeFailure, runScenario, runSeeds, shrink, type ScenarioName } from './run.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<number> {
  const seed = arg('seed');
  if (seed !== undefined) {
    const scenario = (arg('scenario') ?? 'random') as ScenarioName;
    const faults = arg('faults');
    const only = faults === undefined ? undefined : faults === 'none' ? [] : faults.split(',').map(Number);
    const r = await runScenario(scenario, { seed: Number(seed) }, only);
    if (process.argv.includes('--trace')) console.log(r.trace.join('\n'));
    for (const n of r.notes) console.log(n);
    console.log(r.ok ? `ok ${r.scenario} seed=${r.seed} (${r.stats.steps} steps, ${r.stats.agentTicks} agent ticks)` : describeFailure(r, only));
    return r.ok ? 0 : 1;
  }
  const count = Number(arg('seeds') ?? 100);
  const from = Number(arg('from') ?? 1);
  const summary = await runSeeds(from, count, () => performance.now(), (r) => {
    if (!r.ok) console.log(`seed ${r.seed} ${r.scenario}: ${r.violations[0]?.invariant}`);
  });
  for (const r of summary.failed.slice(0, 3)) {
    const s = r.scenario === 'random' ? await shrink(r) : { result: r, keep: undefined };
    console.log(describeFailure(s.result, s.keep));
    console.log(s.result.trace.slice(-40).join('\n'));
  }
  console.log(`${summary.runs} runs over ${count} seeds, ${summary.failed.length} failed, ${summary.steps} steps, ${summary.agentTicks} agent ticks, ${(summary.ms / 1000).toFixed(1)} s`);
  return summary.failed.length === 0 ? 0 : 1;
}

process.exitCode = await main();
