import { describe, expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * sim-drain over several seeds: each seed picks the update limits, the warm-up and the
 * moment of the drain. After every step and agent tick from the drain on, the ready
 * replicas (as the store shows them) never fall below desired − max unavailable and the
 * live ones never exceed desired + max surge; every replica leaves the node, and the
 * cordoned node takes no new placements until it is uncordoned.
 */
describe('sim-drain', () => {
  test.each([1, 2, 3, 4, 5, 6, 7, 8])('seed %i drains within the update limits', async (seed) => {
    const r = await runScenario('sim-drain', { seed, traceLimit: 4_000 });
    expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
  }, 60_000);

  test('a run replays exactly from its seed', async () => {
    const a = await runScenario('sim-drain', { seed: 77 });
    const b = await runScenario('sim-drain', { seed: 77 });
    expect(b.trace).toEqual(a.trace);
  }, 60_000);
});
