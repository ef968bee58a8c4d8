import { afterAll, describe, it } from 'vitest';
import { needs } from '../support/prerequisites.js';
import { quorumStory } from './quorum-story.js';
import { createTestDatabase } from '../support/databases.js';

/** docs/fencing.md with real processes on Postgres: test/agent/quorum-story.ts says what happens. */
describe.runIf(needs('busybox'))('quorum fencing, end to end, on Postgres', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('every pod gone for 60 s stops nothing: same pids, same tenures when a pod returns', async () => {
    await quorumStory(async () => {
      const db = await createTestDatabase('quorum');
      cleanups.unshift(() => db.drop());
      return db.url;
    }, { outageMs: 60_000, cutOff: false }, cleanups);
  }, 360_000);
});
