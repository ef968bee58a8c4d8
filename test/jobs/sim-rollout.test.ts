import { describe, expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * sim-rollout over several seeds: each seed picks the update settings, which node is lost
 * and how (power off, partition, agent killed), when in the v1 → v2 roll, and the readiness
 * warm-up. The availability bound (a ready
 * replica is stopped by the roll only while ready stays ≥ desired − max unavailable) and
 * the surge bound are checked after every step; the story checks the roll completes, v3
 * gets stuck and pauses, and applying v2 again rolls back.
 */
describe('sim-rollout', () => {
  test.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])('seed %i holds the availability bound under node loss', async (seed) => {
    const r = await runScenario('sim-rollout', { seed });
    expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
  }, 60_000);

  test('a run replays exactly from its seed', async () => {
    const a = await runScenario('sim-rollout', { seed: 77 });
    const b = await runScenario('sim-rollout', { seed: 77 });
    expect(b.trace).toEqual(a.trace);
  }, 60_000);
});
