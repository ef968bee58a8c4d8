import { afterAll, describe, it } from 'vitest';
import { needs } from '../support/prerequisites.js';
import { quorumStory } from './quorum-story.js';
import { join } from 'node:path';

/** docs/fencing.md with real processes on SQLite: test/agent/quorum-story.ts says what happens. */
describe.runIf(needs('busybox'))('quorum fencing, end to end, on SQLite', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('every pod gone for 60 s stops nothing; a node cut off alone still fences', async () => {
    await quorumStory(async (dir) => `sqlite:${join(dir, 'store.db')}`, { outageMs: 60_000, cutOff: true }, cleanups);
  }, 360_000);
});
