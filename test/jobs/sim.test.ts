import { describe, expect, test } from 'vitest';
import { runScenario, describeFailure } from '../../jobs/sim/run.js';

/** The stories of the milestone demos, on virtual time, for a few seeds each. */
describe.each(['sim-c0', 'sim-c1'] as const)('%s', (scenario) => {
  test.each([1, 2, 3, 4, 5])('seed %i holds every invariant', async (seed) => {
    const r = await runScenario(scenario, { seed });
    expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-30).join('\n')).toBe(true);
  });
});

test('a run replays exactly from its seed', async () => {
  const a = await runScenario('random', { seed: 4242 });
  const b = await runScenario('random', { seed: 4242 });
  expect(b.trace).toEqual(a.trace);
});
