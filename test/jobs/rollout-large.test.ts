import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { auditor, endpointController, nodeController, replicaController, rolloutController, scheduler } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { Bench } from './harness.js';
import { advance, converger, readyUnlessBad, webSpec } from './play.js';

/**
 * A roll of a service whose readiness proof cannot fit one txn (128 compares): it proves
 * availability against the endpoint set (docs/rollouts.md) and still keeps both bounds.
 */
const all = [replicaController, scheduler, nodeController({ lostGraceMs: 1_000 }), auditor, rolloutController, endpointController];
const converge = converger(all);

async function readyLive(b: Bench): Promise<number> {
  const live = new Set((await b.live('web')).map((r) => r.id));
  const obs = await listFacts(b.store, 'observed', prefixOf('observed'));
  return obs.filter((o) => live.has(o.value.replica) && o.value.state === 'running' && o.value.health.readiness === 'passing').length;
}

describe('a rolling update of 200 replicas', () => {
  test('completes within max surge and max unavailable, its decisions naming the endpoint-set proof', async () => {
    const b = new Bench();
    for (let i = 1; i <= 10; i++) await b.register(`n${i}`, `z${i % 3}`, 8_000);
    await b.settle(all);
    const spec = (v: string) => webSpec(v, { replicas: 200, resources: { cpuMillis: 100 }, update: { maxSurge: '25%', maxUnavailable: '10%', progressDeadlineMs: 600_000 } });
    await b.apply(spec('1'));
    await converge(b, readyUnlessBad);
    expect(await readyLive(b)).toBe(200);
    const first = new Set((await b.live('web')).map((r) => r.id));

    await advance(b, 1_000);
    await b.apply(spec('2'));
    let maxLive = 0;
    let minReady = Infinity;
    // The endpoint set lags the facts by a step: the roll looks again a second later.
    for (let round = 0; round < 40; round++) {
      await converge(b, readyUnlessBad, async () => {
        maxLive = Math.max(maxLive, (await b.live('web')).length);
        minReady = Math.min(minReady, await readyLive(b));
      });
      const kv = await b.store.get(buildKey('rollout', 'web'));
      if (kv && decodeFact('rollout', kv.key, kv.value).state === 'complete') break;
      await advance(b, 1_000);
    }
    const kv = await b.store.get(buildKey('rollout', 'web'));
    expect(kv && decodeFact('rollout', kv.key, kv.value)).toMatchObject({ state: 'complete', newReady: 200, oldLive: 0 });
    const live = await b.live('web');
    expect(live).toHaveLength(200);
    expect(live.some((r) => first.has(r.id))).toBe(false);
    expect(maxLive).toBeLessThanOrEqual(250);
    expect(minReady).toBeGreaterThanOrEqual(180);
    // It used the room it had: some moment had fewer than all 200 ready.
    expect(minReady).toBeLessThan(200);
    const steps = (await why(b.store, 'service', 'web')).history.filter((h) => h.decision.action === 'rolling update');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.some((h) => h.decision.reasons.some((r) => r.startsWith('availability proved by the endpoint set')))).toBe(true);
  });
});
