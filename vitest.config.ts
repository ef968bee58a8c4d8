import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Three on two cores: the longest files wait on processes, timers and Postgres, not the
    // CPU (at 2 workers the cores were 30-45 % idle). Measured at c39f8ec, whole suite:
    // 2 workers 949 s, 3 workers 749 s, 4 workers 758 s. Override with --maxWorkers.
    maxWorkers: 3,
    // Long files first, so none starts last and runs alone (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
  },
});
