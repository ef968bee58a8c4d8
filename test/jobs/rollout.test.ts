import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { Rollout } from '../../core/model/facts.js';
import { serviceSpecSchema, type ServiceSpecInput } from '../../core/model/service.js';
import { templateHash } from '../../core/model/template.js';
import { auditor, nodeController, replicaController, rolloutController, scheduler } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { Bench } from './harness.js';
import { advance, agents, converger, readyUnlessBad, webSpec, type Readiness } from './play.js';

const node = nodeController({ lostGraceMs: 1_000 });
const all = [replicaController, scheduler, node, auditor, rolloutController];
const converge = converger(all);

async function rollout(b: Bench, service = 'web'): Promise<Rollout | undefined> {
  const kv = await b.store.get(buildKey('rollout', service));
  return kv ? decodeFact('rollout', kv.key, kv.value) : undefined;
}

/** Live replicas that are running and ready per the agents' reports. */
async function readyCount(b: Bench, service = 'web'): Promise<number> {
  const live = new Set((await b.live(service)).map((r) => r.id));
  const obs = await listFacts(b.store, 'observed', prefixOf('observed'));
  return obs.filter((o) => live.has(o.value.replica) && o.value.state === 'running' && o.value.health.readiness === 'passing').length;
}

const v = webSpec;
const tmpl = (version: string, extra: Partial<ServiceSpecInput> = {}) => templateHash(serviceSpecSchema.parse(v(version, extra)));

async function cluster(): Promise<Bench> {
  const b = new Bench();
  for (const [n, z] of [['n1', 'a'], ['n2', 'b']] as const) await b.register(n, z);
  await b.settle(all);
  return b;
}

describe('rolling updates', () => {
  test('a changed env replaces every replica under new ids, one at a time, never below 3 ready, never above 4 live', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    const first = (await b.live('web')).map((r) => r.id).sort();
    expect(first).toHaveLength(3);
    expect((await b.live('web')).every((r) => r.template === tmpl('1'))).toBe(true);
    expect(await rollout(b)).toBeUndefined(); // a first deployment is not a roll

    await advance(b, 1_000);
    await b.apply(v('2'));
    let maxLive = 0;
    let minReady = Infinity;
    await converge(b, readyUnlessBad, async () => {
      maxLive = Math.max(maxLive, (await b.live('web')).length);
      minReady = Math.min(minReady, await readyCount(b));
    });
    const live = await b.live('web');
    expect(live).toHaveLength(3);
    expect(live.every((r) => r.template === tmpl('2') && !first.includes(r.id))).toBe(true);
    expect(maxLive).toBe(4);
    expect(minReady).toBe(3);
    const ro = (await rollout(b))!;
    expect(ro).toMatchObject({ state: 'complete', fromTemplate: tmpl('1'), toTemplate: tmpl('2'), desired: 3, newReady: 3, oldLive: 0 });
    expect(ro.toRevision).toBeGreaterThan(ro.fromRevision);
    // Every assignment now carries the new spec.
    expect((await b.assignments()).filter((a) => a.desired === 'run').map((a) => a.spec.env.VERSION)).toEqual(['2', '2', '2']);
    const w = await why(b.store, 'service', 'web');
    const actions = w.history.map((h) => h.decision.action);
    expect(actions.some((a) => a.startsWith('rollout started'))).toBe(true);
    expect(actions.some((a) => a.startsWith('rollout complete'))).toBe(true);
    expect(actions.filter((a) => a === 'rolling update').length).toBeGreaterThanOrEqual(3);
    // Converged: one more round writes nothing.
    const rev = await b.store.revision();
    await converge(b, readyUnlessBad);
    expect(await b.store.revision()).toBe(rev);
  });

  test('changing only replicas, update or placement rolls nothing', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    const ids = (await b.live('web')).map((r) => r.id).sort();
    await b.apply(v('1', { replicas: 3, update: { maxSurge: 2, maxUnavailable: 1 }, placement: { spread: ['node'] }, labels: { team: 'x' } }));
    await converge(b, readyUnlessBad);
    expect((await b.live('web')).map((r) => r.id).sort()).toEqual(ids);
    expect(await rollout(b)).toBeUndefined();
  });

  test('new replicas failing readiness: stuck past the deadline with the reason, paused, old capacity kept; rollback by applying v1', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    const v1 = (await b.live('web')).map((r) => r.id).sort();

    await advance(b, 1_000);
    await b.apply(v('bad'));
    await converge(b, readyUnlessBad);
    let ro = (await rollout(b))!;
    expect(ro.state).toBe('progressing');
    expect(ro).toMatchObject({ newLive: 1, newReady: 0, oldLive: 3 });
    expect(await readyCount(b)).toBe(3);

    await advance(b, 59_999);
    await converge(b, readyUnlessBad);
    expect((await rollout(b))!.state).toBe('progressing');
    await advance(b, 1);
    await converge(b, readyUnlessBad);
    ro = (await rollout(b))!;
    expect(ro.state).toBe('stuck');
    expect(ro.reason).toMatch(/^3\/3 new replicas not ready: readiness failing on n[12]; 2 not created yet/);
    const stuck = (await why(b.store, 'service', 'web')).history.map((h) => h.decision).find((d) => d.action.startsWith('rollout stuck'))!;
    expect(stuck.reasons.join('\n')).toContain('CCA-E0410');

    // Paused: hours later, still the three v1 replicas and the one bad replica, nothing more.
    const before = (await b.live('web')).map((r) => r.id).sort();
    await advance(b, 3_600_000);
    await converge(b, readyUnlessBad);
    expect((await b.live('web')).map((r) => r.id).sort()).toEqual(before);
    expect(v1.every((id) => before.includes(id))).toBe(true);

    // Roll back: the previous spec's replicas still exist and count as new; only the bad one goes.
    await advance(b, 1_000);
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    expect((await b.live('web')).map((r) => r.id).sort()).toEqual(v1);
    ro = (await rollout(b))!;
    expect(ro).toMatchObject({ state: 'complete', toTemplate: tmpl('1'), fromTemplate: tmpl('bad'), newReady: 3, oldLive: 0 });
  });

  test('a stuck roll resumes when its new replicas become ready, then completes', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    await advance(b, 1_000);
    await b.apply(v('2'));
    let healthy = false;
    const gated: Readiness = (a) => (a.spec.env.VERSION === '2' && !healthy ? 'failing' : 'passing');
    await converge(b, gated);
    await advance(b, 60_000);
    await converge(b, gated);
    expect((await rollout(b))!.state).toBe('stuck');
    healthy = true;
    await converge(b, gated);
    const ro = (await rollout(b))!;
    expect(ro.state).toBe('complete');
    const actions = (await why(b.store, 'service', 'web')).history.map((h) => h.decision.action);
    expect(actions).toContain('rollout resumed');
    expect((await b.live('web')).every((r) => r.template === tmpl('2'))).toBe(true);
  });

  test('surge 0, unavailable 1 stops one old replica before creating its replacement', async () => {
    const b = await cluster();
    const spec = (ver: string) => v(ver, { update: { maxSurge: 0, maxUnavailable: 1 } });
    await b.apply(spec('1'));
    await converge(b, readyUnlessBad);
    await advance(b, 1_000);
    await b.apply(spec('2'));
    let maxLive = 0;
    let minReady = Infinity;
    await converge(b, readyUnlessBad, async () => {
      maxLive = Math.max(maxLive, (await b.live('web')).length);
      minReady = Math.min(minReady, await readyCount(b));
    });
    expect(maxLive).toBe(3);
    expect(minReady).toBe(2);
    expect((await b.live('web')).every((r) => r.template === templateHash(serviceSpecSchema.parse(spec('2'))))).toBe(true);
    expect((await rollout(b))!.state).toBe('complete');
  });

  test('the scheduler holds a replica made from an older template; the roll stops it instead', async () => {
    const b = new Bench(); // no nodes yet: nothing is placed
    await b.apply(v('1'));
    await b.settle(all);
    expect(await b.live('web')).toHaveLength(3);
    await advance(b, 1_000);
    await b.apply(v('2'));
    await b.settle(all);
    for (const [n, z] of [['n1', 'a'], ['n2', 'b']] as const) await b.register(n, z);
    await converge(b, readyUnlessBad);
    const placed = await b.assignments();
    expect(placed.every((a) => a.spec.env.VERSION === '2')).toBe(true);
    expect((await b.live('web')).every((r) => r.template === tmpl('2'))).toBe(true);
    expect((await rollout(b))!.state).toBe('complete');
  });

  test('a stale recorded template (e.g. hashed before a newer schema added a default) does not roll: the assignment decides', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    const ids = (await b.live('web')).map((r) => r.id).sort();
    for (const r of await b.live('web')) await b.store.put(buildKey('replica', 'web', r.id), encodeFact('replica', { ...r, template: '0123456789abcdef' }));
    await converge(b, readyUnlessBad);
    expect((await b.live('web')).map((r) => r.id).sort()).toEqual(ids);
    expect(await rollout(b)).toBeUndefined();
  });

  test('a paused roll still replaces old replicas lost with their node (with the only template it can), never surging', async () => {
    const b = new Bench();
    await b.register('n1', 'a');
    await b.settle(all);
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    await b.register('n2', 'b');
    await converge(b, readyUnlessBad);
    await advance(b, 1_000);
    await b.apply(v('bad'));
    await converge(b, readyUnlessBad);
    await advance(b, 60_000);
    await converge(b, readyUnlessBad);
    expect((await rollout(b))!.state).toBe('stuck');
    expect(await b.live('web')).toHaveLength(4);
    await b.store.revokeLease(b.leases.get('n1')!); // n1 and its three v1 replicas are gone
    b.leases.delete('n1');
    await converge(b, readyUnlessBad);
    await advance(b, 1_000);
    await converge(b, readyUnlessBad);
    const live = await b.live('web');
    expect(live).toHaveLength(3);
    expect(live.every((r) => r.template === tmpl('bad'))).toBe(true);
    expect((await rollout(b))!.state).toBe('stuck');
  });

  test('read-set: a new replica that stops being ready between the plan and its txn stops no old one', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    await advance(b, 1_000);
    await b.apply(v('2'));
    // Run until the first new replica exists and is placed, but report it not ready yet.
    let newReady = false;
    const gate: Readiness = (a) => (a.spec.env.VERSION === '2' && !newReady ? 'unknown' : 'passing');
    await converge(b, gate);
    expect((await b.live('web')).filter((r) => r.template === tmpl('2'))).toHaveLength(1);
    newReady = true;
    await agents(b, gate); // now ready: the next replica step would stop an old one
    const fresh = (await b.live('web')).find((r) => r.template === tmpl('2'))!;
    const obsKey = (await listFacts(b.store, 'observed', prefixOf('observed'))).find((o) => o.value.replica === fresh.id)!.key;
    // Between the step's reads and its txn, the new replica's readiness fails.
    const store = b.store;
    let injected = false;
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop !== 'txn') return Reflect.get(target, prop, receiver);
        return async (req: Parameters<typeof store.txn>[0]) => {
          if (!injected) {
            injected = true;
            const cur = decodeFact('observed', obsKey, (await store.get(obsKey))!.value);
            await store.put(obsKey, encodeFact('observed', { ...cur, health: { ...cur.health, readiness: 'failing' } }));
          }
          return store.txn(req);
        };
      },
    });
    await replicaController.reconcile({ store: racing, now: b.t, random: () => 0.5, subject: 'web' });
    expect(injected).toBe(true);
    expect((await b.replicas('web')).filter((r) => r.desired === 'stop')).toEqual([]);
    // Without the race the same step stops one old replica.
    await agents(b, () => 'passing');
    await b.step(replicaController, 'web');
    expect((await b.replicas('web')).filter((r) => r.desired === 'stop' && r.template === tmpl('1'))).toHaveLength(1);
  });

  test('deleting the service removes its rollout record', async () => {
    const b = await cluster();
    await b.apply(v('1'));
    await converge(b, readyUnlessBad);
    await b.apply(v('2'));
    await converge(b, readyUnlessBad);
    expect(await rollout(b)).toBeDefined();
    await b.store.delete(buildKey('service', 'web'));
    await converge(b, readyUnlessBad);
    expect(await rollout(b)).toBeUndefined();
  });
});
