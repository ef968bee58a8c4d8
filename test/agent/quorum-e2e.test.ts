import { afterAll, describe, it } from 'vitest';
import { join } from 'node:path';
import { needs } from '../support/prerequisites.js';
import { createTestDatabase } from '../support/databases.js';
import { startTestEtcd } from '../support/etcd-server.js';
import { quorumStory } from './quorum-story.js';

/**
 * docs/fencing.md with real processes, on each backend: test/agent/quorum-story.ts says what
 * happens. The three stories run at once: each is a minute of waiting (the pod gone past the
 * lease) for little CPU, and run one after another they held a test worker for 4.5 minutes.
 */
describe.runIf(needs('busybox'))('quorum fencing, end to end', () => {
  const cleanups: (() => Promise<void> | void)[][] = [];
  const own = () => {
    const list: (() => Promise<void> | void)[] = [];
    cleanups.push(list);
    return list;
  };
  afterAll(async () => {
    await Promise.all(cleanups.map(async (list) => {
      for (const c of list.reverse()) await c();
    }));
  });

  it.concurrent('on SQLite: every pod gone for 60 s stops nothing; a node cut off alone still fences', async (ctx) => {
    await quorumStory(ctx, async (dir) => `sqlite:${join(dir, 'store.db')}`, { outageMs: 60_000, cutOff: true }, own());
  }, 360_000);

  it.concurrent('on etcd: every pod gone for 60 s stops nothing: same pids, same tenures when a pod returns', async (ctx) => {
    const mine = own();
    await quorumStory(ctx, async () => {
      const etcd = await startTestEtcd();
      mine.unshift(() => etcd.stop());
      return `etcd://${etcd.hostPort}/quorum-e2e-${process.pid}`;
    }, { outageMs: 60_000, cutOff: false }, mine);
  }, 360_000);

  it.concurrent('on Postgres: every pod gone for 60 s stops nothing: same pids, same tenures when a pod returns', async (ctx) => {
    const mine = own();
    await quorumStory(ctx, async () => {
      const db = await createTestDatabase('quorum');
      mine.unshift(() => db.drop());
      return db.url;
    }, { outageMs: 60_000, cutOff: false }, mine);
  }, 360_000);
});
