import { describe, expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * sim-volumes over several seeds: a stateful replica is never replaced while its old copy
 * may run (the world's `stateful-replaced-only-with-proof` invariant, checked at every new
 * assignment, and the story's "at most one db copy" check every 100 ms), under a partition,
 * a power loss, a store outage and an agent restart; and its data node is preferred.
 */
describe('sim-volumes', () => {
  test.each(Array.from({ length: 12 }, (_, i) => i + 1))('seed %i holds every invariant', async (seed) => {
    const r = await runScenario('sim-volumes', { seed, traceLimit: 4_000 });
    expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
  });

  test('the same seed replays the same story', async () => {
    const a = await runScenario('sim-volumes', { seed: 7 });
    const b = await runScenario('sim-volumes', { seed: 7 });
    expect(b.trace).toEqual(a.trace);
  });
});
