import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more workers than that only adds contention on the shared Postgres.
    maxWorkers: 2,
    // Long files first, so none starts last and runs alone (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
  },
});
