import { describe, expect, test } from 'vitest';
import { describeFailure, runScenario } from '../../jobs/sim/run.js';

/**
 * The quorum rule's stories (jobs/sim/story-quorum.ts), a few seeds each: a control-plane
 * outage of minutes stops and moves nothing, nor does the control plane's return with its
 * store down; a node cut off alone and a minority cut off
 * together fence and are replaced; a majority cut off together keeps running and is held;
 * random flapping keeps every invariant. The world checks throughout that no replacement
 * starts while the replica it replaces still runs, and that everything converges after.
 */
describe('sim-quorum', () => {
  const stories = ['sim-quorum-outage', 'sim-quorum-return-store-down', 'sim-quorum-isolated', 'sim-quorum-minority', 'sim-quorum-majority', 'sim-quorum-flapping'];
  for (const story of stories) {
    test.each([1, 2, 3])(`${story} seed %i`, async (seed) => {
      const r = await runScenario(story, { seed, traceLimit: 4_000 });
      expect(r.ok, describeFailure(r) + '\n' + r.trace.slice(-40).join('\n')).toBe(true);
    }, 120_000);
  }
});
