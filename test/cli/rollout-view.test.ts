import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { rolloutText } from '../../cli/views.js';
import { liveServers, type Live } from './harness.js';

const open = liveServers();

const base = { fromRevision: 4, toRevision: 9, desired: 3, newReady: 1, newLive: 2, oldLive: 2, reason: '', current: true };

describe('rollouts in cca get services', () => {
  test('the text of each state', () => {
    expect(rolloutText(null)).toBe('-');
    expect(rolloutText({ ...base, state: 'progressing' })).toBe('rolling out revision 9: 1/3 new ready, 2 old left');
    expect(rolloutText({ ...base, state: 'complete' })).toBe('rollout complete (revision 4 → 9)');
    expect(rolloutText({ ...base, state: 'stuck', reason: '2/3 new replicas not ready: readiness failing on n1' })).toBe('rollout stuck: 2/3 new replicas not ready: readiness failing on n1');
  });

  test('a ROLLOUT column appears once a service has rolled; -o json carries the record', async () => {
    const live = await open();
    for (const name of ['api', 'web']) {
      await live.store.put(buildKey('service', name), encodeFact('service', serviceSpecSchema.parse({ name, image: 'busybox:1.35', replicas: 3 })));
    }
    const before = await live.run(['get', 'services']);
    expect(before.stdout.split('\n')[0]).toMatch(/^NAME\s+READY\s+RUNNING\s+PLACED\s+PENDING$/);
    await live.store.put(
      buildKey('rollout', 'web'),
      encodeFact('rollout', { service: 'web', state: 'stuck', startedAt: 1, ...base, reason: '2/3 new replicas not ready: readiness failing on n1', fromTemplate: 'a', toTemplate: 'b', progressAt: 1, progressDeadlineMs: 600_000 }),
    );
    const plain = await live.run(['get', 'services']);
    expect(plain.stdout).toMatch(/^NAME\s+READY\s+RUNNING\s+PLACED\s+PENDING\s+ROLLOUT$/m);
    expect(plain.stdout).toMatch(/^api\s+0\/3\s+0\/3\s+0\/3\s+0\s+-$/m);
    expect(plain.stdout).toMatch(/^web\s+0\/3\s+0\/3\s+0\/3\s+0\s+rollout stuck: 2\/3 new replicas not ready: readiness failing on n1$/m);
    const json = JSON.parse((await live.run(['get', 'service', 'web', '-o', 'json'])).stdout) as { items: { rollout: unknown; updated: number }[] };
    // Its toTemplate ('b') is not the spec's: a roll an apply has since replaced.
    expect(json.items[0]!.rollout).toEqual({ state: 'stuck', ...base, current: false, reason: '2/3 new replicas not ready: readiness failing on n1' });
  });
});
