import { expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * 100 randomized fault schedules from seed `first` (CI runs 200 seeds over two files, one per
 * worker). CCA_SIM_SEED_BASE shifts the window so a CI run can vary its seeds yet replay
 * (the failure prints the seed). Every invariant is checked, the single writer per key
 * prefix among them (jobs/sim/attributing-store.ts).
 */
export function seedWindow(first: number): void {
  const base = Number(process.env.CCA_SIM_SEED_BASE ?? 0) + first;
  test(`100 random schedules (seeds ${base}..${base + 99}) hold every invariant`, async () => {
    const failures: string[] = [];
    for (let seed = base; seed < base + 100; seed++) {
      const r = await runScenario('random', { seed, traceLimit: 200 });
      if (!r.ok) failures.push(describeFailure(r));
    }
    expect(failures, failures.join('\n')).toEqual([]);
  }, 120_000);
  test(`50 random schedules with the quorum rule on both sides (seeds ${base}..${base + 49}) hold every invariant`, async () => {
    const failures: string[] = [];
    for (let seed = base; seed < base + 50; seed++) {
      const r = await runScenario('random-quorum', { seed, traceLimit: 200 });
      if (!r.ok) failures.push(describeFailure(r));
    }
    expect(failures, failures.join('\n')).toEqual([]);
  }, 120_000);
}
