import { expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

// Randomized fault schedules, seeds 101..200 (CI runs 200 seeds over two files, one per worker).
// CCA_SIM_SEED_BASE shifts the window so a CI run can vary its seeds yet replay (print it with the failure).
const base = Number(process.env.CCA_SIM_SEED_BASE ?? 0) + 101;

test('100 random schedules hold every invariant', async () => {
  const failures: string[] = [];
  for (let seed = base; seed < base + 100; seed++) {
    const r = await runScenario('random', { seed, traceLimit: 200 });
    if (!r.ok) failures.push(describeFailure(r));
  }
  expect(failures, failures.join('\n')).toEqual([]);
}, 120_000);
