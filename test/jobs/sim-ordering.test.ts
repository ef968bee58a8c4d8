import { describe, expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/** sim-ordering over several seeds: no api replica is placed while db has fewer than its desired count ready. */
describe('sim-ordering', () => {
  test.each(Array.from({ length: 12 }, (_, i) => i + 1))('seed %i holds every invariant', async (seed) => {
    const r = await runScenario('sim-ordering', { seed });
    expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
    expect(r.notes.join('\n')).toMatch(/placements checked against db's endpoints: \d+/);
  });

  test('replays exactly from its seed', async () => {
    const a = await runScenario('sim-ordering', { seed: 77 });
    const b = await runScenario('sim-ordering', { seed: 77 });
    expect(b.trace).toEqual(a.trace);
  });
});
