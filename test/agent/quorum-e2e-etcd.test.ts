import { afterAll, describe, it } from 'vitest';
import { needs } from '../support/prerequisites.js';
import { quorumStory } from './quorum-story.js';
import { startTestEtcd } from '../support/etcd-server.js';

/** docs/fencing.md with real processes on etcd: test/agent/quorum-story.ts says what happens. */
describe.runIf(needs('busybox'))('quorum fencing, end to end, on etcd', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('every pod gone for 60 s stops nothing: same pids, same tenures when a pod returns', async () => {
    await quorumStory(async () => {
      const etcd = await startTestEtcd();
      cleanups.unshift(() => etcd.stop());
      return `etcd://${etcd.hostPort}/quorum-e2e-${process.pid}`;
    }, { outageMs: 60_000, cutOff: false }, cleanups);
  }, 360_000);
});
