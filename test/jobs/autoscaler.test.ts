import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import { auditor, autoscaler, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { listFacts } from '../../jobs/facts.js';
import { why } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const scaler = autoscaler({ syncMs: 15_000 });
const rest = [replicaController, scheduler, node, auditor];
const all = [...rest, scaler];

const svc = (extra: Partial<ServiceSpecInput> = {}): ServiceSpecInput => ({
  name: 'web',
  image: 'web:1',
  replicas: 2,
  resources: { cpuMillis: 100 },
  autoscale: { min: 1, max: 6, targetCpuPercent: 50, scaleDownWindowMs: 60_000 },
  ...extra,
});

async function bench() {
  const b = new Bench();
  await b.register('n1', 'a', 8_000);
  await b.settle(rest);
  return b;
}

/** Play the agent: every running replica of web reports this CPU usage (millicores), or none. */
async function report(b: Bench, usage: (replica: string) => number | undefined) {
  await advance(b, 1_000); // a report comes later than what it reports on (decision ids carry the time)
  for (const a of await b.assignments('n1')) {
    if (a.desired !== 'run') continue;
    const u = usage(a.replica);
    await b.store.put(
      buildKey('observed', 'n1', a.replica),
      encodeFact('observed', { replica: a.replica, service: a.service, node: 'n1', tenure: a.tenure, state: 'running', ...(u !== undefined ? { usage: { cpuMillis: u, memoryBytes: 1 << 20 } } : {}), at: b.t }),
    );
  }
}

/** Move the clock, keeping the node's lease alive as its agent would. */
async function advance(b: Bench, ms: number) {
  for (let left = ms; left > 0; left -= 5_000) {
    b.t += Math.min(5_000, left);
    await b.store.keepAlive(b.leases.get('n1')!);
  }
}

async function intent(b: Bench) {
  const kv = await b.store.get(buildKey('autoscale', 'web'));
  return kv ? decodeFact('autoscale', kv.key, kv.value) : undefined;
}

async function converged(b: Bench) {
  const rev = await b.store.revision();
  for (const c of all) for (const s of (await c.subjects?.(b.store)) ?? [undefined]) await b.step(c, s);
  return (await b.store.revision()) === rev;
}

describe('autoscaler controller', () => {
  test('no usage yet: writes nothing and comes back at the sync period', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => undefined);
    const rev = await b.store.revision();
    const w = await b.step(scaler, 'web');
    expect(w.at).toBe(b.t + 15_000);
    expect(await b.store.revision()).toBe(rev);
    expect(await intent(b)).toBeUndefined();
  });

  test('a steady load on target: one first intent, then a converged system writes nothing', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => 50);
    await b.settle(all);
    const i = await intent(b);
    expect(i).toMatchObject({ desired: 2, observedCpuPercent: 50, recommendations: [{ desired: 2 }] });
    await advance(b, 15_000);
    expect(await converged(b)).toBe(true);
    await advance(b, 600_000);
    expect(await converged(b)).toBe(true);
    // No scaling step was taken: no autoscaler decision.
    const ds = await listFacts(b.store, 'decision', prefixOf('decision', 'service', 'web'));
    expect(ds.filter((d) => d.value.controller === 'autoscaler')).toEqual([]);
  });

  test('load above target scales up at once: a decision with the utilisation and samples; the replica controller follows', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => 90); // 90% of 100m, target 50% → ceil(2 × 1.8) = 4
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(4);
    await b.settle(rest);
    expect(await b.live('web')).toHaveLength(4);
    // The spec's replicas stay the user's.
    const spec = decodeFact('service', buildKey('service', 'web'), (await b.store.get(buildKey('service', 'web')))!.value);
    expect(spec.replicas).toBe(2);
    const d = (await listFacts(b.store, 'decision', prefixOf('decision', 'service', 'web'))).map((f) => f.value).find((v) => v.controller === 'autoscaler')!;
    expect(d.action).toBe('autoscaled up to 4 (from 2)');
    expect(d.reasons[0]).toContain('cpu 90% of request over 2 replica(s) (target 50%)');
    expect(d.evidence.filter((e) => e.key.startsWith('/observed/'))).toHaveLength(2);
    // cca why service web: the replica controller's scale-up, caused by the autoscaler's decision, down to a usage report.
    const w = await why(b.store, 'service', 'web');
    expect(w.complete).toBe(true);
    expect(w.chain.map((l) => l.decision.controller)).toEqual(['replica', 'autoscaler']);
    expect(w.terminal?.fact.startsWith('/observed/n1/web-')).toBe(true);
  });

  test('scale-down waits for the window; a dip shorter than the window changes nothing', async () => {
    const b = await bench();
    await b.apply(svc({ replicas: 4 }));
    await b.settle(rest);
    await report(b, () => 50);
    await b.settle(all);
    expect((await intent(b))?.desired).toBe(4);
    // Load drops: recommendation 2 (4 × 0.5), held at 4 for the 60 s window.
    await advance(b, 15_000);
    await report(b, () => 25);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(4);
    expect((await intent(b))?.recommendations.map((r) => r.desired)).toEqual([4, 2]);
    await advance(b, 30_000);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(4);
    // Back up before the window ran out: nothing was stopped.
    await advance(b, 15_000);
    await report(b, () => 50);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(4);
    await b.settle(rest);
    expect(await b.live('web')).toHaveLength(4);
    // A lasting drop: after the window, down to the window's highest recommendation.
    await advance(b, 15_000);
    await report(b, () => 25);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(4);
    await advance(b, 61_000);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(2);
    await b.settle(rest);
    expect(await b.live('web')).toHaveLength(2);
  });

  test('replicas without a sample (just started) do not count toward utilisation', async () => {
    const b = await bench();
    await b.apply(svc({ replicas: 4 }));
    await b.settle(rest);
    const ids = (await b.live('web')).map((r) => r.id).sort();
    // Two report 100% (ratio 2), two have no sample yet: counted idle → ratio 1 → stay at 4, not 8.
    await report(b, (r) => (r === ids[0] || r === ids[1] ? 100 : undefined));
    await b.settle(all);
    expect((await intent(b))?.desired).toBe(4);
  });

  test('clamped to max; the replica controller clamps a stale intent to the spec’s current bounds', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => 1_000);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(6);
    await b.settle(rest);
    expect(await b.live('web')).toHaveLength(6);
    // The user lowers max: the replica controller follows at once, the autoscaler rewrites its intent.
    await b.apply(svc({ autoscale: { min: 1, max: 3, targetCpuPercent: 50, scaleDownWindowMs: 60_000 } }));
    await b.step(replicaController, 'web');
    expect(await b.live('web')).toHaveLength(3);
    await report(b, () => 1_000);
    await b.step(scaler, 'web');
    expect((await intent(b))?.desired).toBe(3);
  });

  test('a stale plan writes nothing: the intent is compared (read-set rule)', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => 90);
    // Another step wrote the intent meanwhile: the store refuses a txn that read it absent.
    const store = b.store;
    const orig = store.txn.bind(store);
    let injected = false;
    store.txn = async (t) => {
      if (!injected && t.success.some((o) => 'put' in o && o.put.key === buildKey('autoscale', 'web'))) {
        injected = true;
        await store.put(buildKey('autoscale', 'web'), encodeFact('autoscale', { service: 'web', desired: 3, observedCpuPercent: 70, stableSince: 0, at: 0, recommendations: [] }));
      }
      return orig(t);
    };
    const w = await b.step(scaler, 'web');
    store.txn = orig;
    expect(w.at).toBe(b.t + 100);
    expect((await intent(b))?.desired).toBe(3);
    expect((await listFacts(b.store, 'decision', prefixOf('decision', 'service', 'web'))).filter((d) => d.value.controller === 'autoscaler')).toEqual([]);
  });

  test('the replica controller compares the intent it sized with: a changed intent voids its plan', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    const put = (desired: number) => b.store.put(buildKey('autoscale', 'web'), encodeFact('autoscale', { service: 'web', desired, observedCpuPercent: 0, stableSince: 0, at: 0, recommendations: [] }));
    await put(5);
    await advance(b, 1_000);
    const store = b.store;
    const orig = store.txn.bind(store);
    let injected = false;
    store.txn = async (t) => {
      // The first txn that writes (getMany is a txn of reads on this store).
      if (!injected && t.success.some((op) => !('range' in op))) {
        injected = true;
        await put(3); // the autoscaler changed its mind between the read and the write
      }
      return orig(t);
    };
    const w = await b.step(replicaController, 'web');
    store.txn = orig;
    expect(w.at).toBe(b.t + 100); // retry
    expect(await b.live('web')).toHaveLength(2); // nothing created on the stale intent
    await advance(b, 1_000);
    await b.step(replicaController, 'web');
    expect(await b.live('web')).toHaveLength(3);
  });

  test('autoscale removed from the spec: the intent is deleted and the spec’s replicas rule', async () => {
    const b = await bench();
    await b.apply(svc());
    await b.settle(rest);
    await report(b, () => 90);
    await b.settle(all);
    expect(await b.live('web')).toHaveLength(4);
    const { autoscale: _drop, ...plain } = svc();
    await b.apply(plain);
    await b.settle(all);
    expect(await intent(b)).toBeUndefined();
    expect(await b.live('web')).toHaveLength(2);
  });
});
