import { expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * sim-autoscale over several seeds: the desired count stays within [min, max], no scale-down
 * comes sooner than the window after a scale-up (noise included), direction changes are
 * bounded, step curves converge to the count that puts the load on target, and the usual
 * invariants hold with a machine lost in the middle.
 */
const SEEDS = Number(process.env.CCA_AUTOSCALE_SEEDS ?? 6);

test.each(Array.from({ length: SEEDS }, (_, i) => i + 1))('sim-autoscale seed %i holds every invariant', async (seed) => {
  const r = await runScenario('sim-autoscale', { seed, traceLimit: 4_000 });
  expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
}, 120_000);
