import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { runScenario } from '../../jobs/sim/run.js';
import { describeFailure } from '../../jobs/sim/run.js';
import { endpointProblems } from '../../jobs/sim/story-endpoints.js';
import { Bench } from './harness.js';

const SEEDS = Number(process.env.CCA_SIM_ENDPOINT_SEEDS ?? 12);
const FIRST = Number(process.env.CCA_SEED ?? 1);

describe('sim-endpoints', () => {
  test(`the endpoint invariants hold under faults over ${SEEDS} seeds`, async () => {
    const stale: number[] = [];
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const r = await runScenario('sim-endpoints', { seed, traceLimit: 4_000 });
      if (!r.ok) {
        console.log(r.trace.slice(-80).join('\n'));
        expect.fail(describeFailure(r));
      }
      const m = /longest disagreement .*?: (\d+) ms/.exec(r.notes.join('\n'));
      stale.push(Number(m?.[1] ?? -1));
    }
    console.log(`sim-endpoints: ${SEEDS} seeds from ${FIRST}, longest disagreement per seed (ms): ${stale.join(', ')}`);
    expect(stale.every((s) => s >= 0)).toBe(true);
  }, 240_000);

  test(`the endpoint invariants hold under the random fault schedules over ${SEEDS} seeds`, async () => {
    const stale: number[] = [];
    for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
      const r = await runScenario('sim-endpoints-random', { seed, traceLimit: 4_000 });
      if (!r.ok) {
        console.log(r.trace.slice(-80).join('\n'));
        expect.fail(describeFailure(r));
      }
      stale.push(Number(/longest disagreement .*?: (\d+) ms/.exec(r.notes.join('\n'))?.[1] ?? -1));
    }
    console.log(`sim-endpoints-random: ${SEEDS} seeds from ${FIRST}, longest disagreement per seed (ms): ${stale.join(', ')}`);
    expect(stale.every((s) => s >= 0)).toBe(true);
  }, 240_000);

  test('the invariant can fail: it catches an endpoint that is not ready, and a ready replica left out', async () => {
    const b = new Bench();
    await b.register('n1');
    await b.apply({ name: 'web', image: 'web:1', replicas: 1, ports: [{ name: 'http', container: 80 }], health: { readiness: { probe: { type: 'tcp' } } } });
    const { replicaController, scheduler, nodeController } = await import('../../jobs/controllers/index.js');
    await b.settle([replicaController, scheduler, nodeController()]);
    const [r] = await b.live('web');
    const tenure = (await b.store.get(buildKey('node', 'n1')))!.createRevision;
    const obs = (readiness: 'passing' | 'failing') =>
      encodeFact('observed', { replica: r!.id, service: 'web', node: 'n1', tenure, state: 'running', health: { liveness: 'unknown', readiness }, at: 1 });
    await b.store.put(buildKey('observed', 'n1', r!.id), obs('failing'));
    await b.store.put(buildKey('endpoints', 'web'), encodeFact('endpoints', { service: 'web', endpoints: [{ replica: r!.id, node: 'n1', address: '127.0.0.1', ports: {} }], at: 1 }));
    expect((await endpointProblems(b.store)).sound).toEqual([`web: endpoint ${r!.id} is not ready on n1 (readiness failing)`]);
    await b.store.put(buildKey('observed', 'n1', r!.id), obs('passing'));
    await b.store.put(buildKey('endpoints', 'web'), encodeFact('endpoints', { service: 'web', endpoints: [], at: 2 }));
    expect(await endpointProblems(b.store)).toEqual({ sound: [], complete: [`web: ${r!.id} is running and ready but not published`] });
  });
});
