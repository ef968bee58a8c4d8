import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { replicaReason } from '../../core/model/replica-outcome.js';
import { auditor, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { Bench } from './harness.js';

const node = nodeController({ lostGraceMs: 1_000 });
const all = [replicaController, scheduler, node, auditor];

async function cluster(nodes: [string, string][] = [['n1', 'a'], ['n2', 'b'], ['n3', 'c']]) {
  const b = new Bench();
  for (const [n, z] of nodes) await b.register(n, z);
  await b.settle(all);
  return b;
}

describe('replica controller', () => {
  test('creates the desired replicas with fresh ids, and a converged system writes nothing', async () => {
    const b = await cluster();
    await b.apply({ name: 'web', image: 'web:1', replicas: 3 });
    await b.settle(all);
    const live = await b.live('web');
    expect(live).toHaveLength(3);
    expect(new Set(live.map((r) => r.id)).size).toBe(3);
    expect(live.every((r) => /^web-[a-z0-9]{8}$/.test(r.id))).toBe(true);
    const rev = await b.store.revision();
    for (const c of all) for (const s of (await c.subjects?.(b.store)) ?? [undefined]) await b.step(c, s);
    expect(await b.store.revision()).toBe(rev);
  });

  test('scale-down stops unplaced first, then the newest; retires after the grace period', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 2, stopGraceMs: 5_000 });
    await b.settle(all);
    b.t += 1_000;
    await b.apply({ name: 'web', image: 'web:1', replicas: 3, stopGraceMs: 5_000, resources: { cpuMillis: 100 } });
    await b.step(replicaController, 'web'); // the third exists, not yet placed
    const newest = (await b.live('web')).sort((x, y) => y.createdAt - x.createdAt)[0]!;
    b.t += 1;
    await b.apply({ name: 'web', image: 'web:1', replicas: 2, stopGraceMs: 5_000, resources: { cpuMillis: 100 } });
    const wake = await b.step(replicaController, 'web');
    const stopped = (await b.replicas('web')).filter((r) => r.desired === 'stop');
    expect(stopped.map((r) => r.id)).toEqual([newest.id]);
    expect(wake.at).toBeGreaterThan(b.t); // a timer for the grace, which the next step finds unnecessary
    await b.step(replicaController, 'web'); // never placed: retired without waiting…
    expect((await b.replicas('web')).find((r) => r.id === newest.id)?.retired).toBe(true);
    await b.step(replicaController, 'web'); // …and its record removed
    expect((await b.replicas('web')).find((r) => r.id === newest.id)).toBeUndefined();
    // Scale down a placed one: it waits for the grace period.
    await b.settle(all);
    b.t += 1;
    await b.apply({ name: 'web', image: 'web:1', replicas: 1, stopGraceMs: 5_000, resources: { cpuMillis: 100 } });
    const w = await b.step(replicaController, 'web');
    expect(w.at).toBe(b.t + 5_000);
    await b.settle(all);
    expect((await b.replicas('web')).filter((r) => r.desired === 'stop' && !r.retired)).toHaveLength(1);
    b.t += 5_000;
    await b.settle(all);
    expect(await b.live('web')).toHaveLength(1);
    expect(await b.assignments()).toHaveLength(1);
  });

  test('an exited replica is replaced under a new id; an inadmissible observation is ignored', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 1 });
    await b.settle(all);
    const [r] = await b.live('web');
    await b.observe('n1', r!.id, 'exited', 1, 999); // a report from another tenure
    await b.settle(all);
    expect((await b.live('web')).map((x) => x.id)).toEqual([r!.id]);
    await b.observe('n1', r!.id, 'exited', 1);
    await b.settle(all);
    const now = await b.live('web');
    expect(now).toHaveLength(1);
    expect(now[0]!.id).not.toBe(r!.id);
    const answer = await why(b.store, 'replica', now[0]!.id);
    expect(answer.complete).toBe(true);
    expect(answer.terminal?.fact).toBe(buildKey('observed', 'n1', r!.id));
  });

  test('restart on-failure: a clean exit completes and is not replaced', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'job', image: 'web:1', replicas: 1, restart: 'on-failure' });
    await b.settle(all);
    const [r] = await b.live('job');
    await b.observe('n1', r!.id, 'exited', 0);
    await b.settle(all);
    expect(await b.live('job')).toHaveLength(0);
    const [done] = await b.replicas('job');
    expect(done!.ended).toEqual({ outcome: 'completed', node: 'n1', exit: { state: 'exited', code: 0, restart: 'on-failure' } });
    expect(replicaReason(done!)).toBe('completed: exited with code 0 on n1 (restart on-failure)');
  });

  test('deleting a service stops and removes its replicas', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 2, stopGraceMs: 1_000 });
    await b.settle(all);
    await b.store.delete(buildKey('service', 'web'));
    await b.settle(all);
    b.t += 1_000;
    await b.settle(all);
    expect(await b.replicas('web')).toHaveLength(0);
    expect(await b.assignments()).toHaveLength(0);
    expect((await b.fact('allocation', 'n1'))!.used.cpuMillis).toBe(0);
    expect((await why(b.store, 'service', 'web')).history[0]!.decision.action).toBe('deleted: stopping every replica');
  });
});

describe('scheduler', () => {
  test('spreads over zones, updates allocations in the same txn, never overcommits', async () => {
    const b = await cluster();
    await b.apply({ name: 'web', image: 'web:1', replicas: 6, resources: { cpuMillis: 1_000 } });
    await b.settle(all);
    const per = new Map<string, number>();
    for (const a of await b.assignments()) per.set(a.node, (per.get(a.node) ?? 0) + 1);
    expect([...per.values()]).toEqual([2, 2, 2]);
    for (const n of ['n1', 'n2', 'n3']) expect((await b.fact('allocation', n))!.used.cpuMillis).toBe(2_000);
    await b.apply({ name: 'big', image: 'web:1', replicas: 4, resources: { cpuMillis: 2_000 } });
    await b.settle(all);
    for (const n of ['n1', 'n2', 'n3']) expect((await b.fact('allocation', n))!.used.cpuMillis).toBeLessThanOrEqual(4_000);
    // Four live replicas, room for three: exactly one has no placement.
    const live = await b.live('big');
    const unplaced = (await Promise.all(live.map(async (r) => ((await b.store.get(buildKey('placement', r.id))) ? [] : [r])))).flat();
    expect(live).toHaveLength(4);
    expect(unplaced).toHaveLength(1);
    const placed = (await b.assignments()).filter((a) => a.service === 'big');
    expect(placed).toHaveLength(3);
    const waiting = (await b.live('big')).find((r) => !placed.some((a) => a.replica === r.id))!;
    const answer = await why(b.store, 'replica', waiting.id);
    expect(answer.history[0]!.decision.action).toBe('pending');
    expect(answer.history[0]!.decision.reasons[0]).toBe('needs 2 cpu and 128Mi memory: 3 nodes have < 2 cpu free');
    expect(answer.complete).toBe(true);
  });

  test('two racing scheduler steps place each replica once', async () => {
    const b = await cluster();
    await b.apply({ name: 'web', image: 'web:1', replicas: 9, resources: { cpuMillis: 1_000 } });
    await b.step(replicaController, 'web');
    await Promise.all([b.step(scheduler), b.step(scheduler), b.step(scheduler)]);
    await b.settle(all);
    const as = await b.assignments();
    expect(as).toHaveLength(9);
    expect(new Set(as.map((a) => a.replica)).size).toBe(9);
    for (const n of ['n1', 'n2', 'n3']) {
      const sum = as.filter((a) => a.node === n).reduce((s, a) => s + a.resources.cpuMillis, 0);
      expect((await b.fact('allocation', n))!.used.cpuMillis).toBe(sum);
    }
  });

  test('a stale plan writes nothing: a placement compares the node tenure and the allocation', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 1 });
    await b.step(replicaController, 'web');
    // The node re-registers (new tenure) between the read and the write: wrap the store so it happens mid-step.
    const store = b.store;
    let raced = false;
    const racing = new Proxy(store, {
      get(target, prop, recv) {
        if (prop === 'txn') {
          return async (req: Parameters<typeof store.txn>[0]) => {
            if (!raced) {
              raced = true;
              await store.revokeLease(b.leases.get('n1')!);
              await b.register('n1');
            }
            return target.txn(req);
          };
        }
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const wake = await scheduler.reconcile({ store: racing, now: b.t, random: Math.random });
    expect(await b.assignments()).toHaveLength(0);
    expect(wake.at).toBeDefined();
  });
});

describe('node controller', () => {
  test('lease expiry → lost → after the grace its replicas are lost and replaced elsewhere; nothing moves back', async () => {
    const b = await cluster();
    await b.apply({ name: 'web', image: 'web:1', replicas: 3 });
    await b.settle(all);
    const on3 = (await b.assignments('n3')).map((a) => a.replica);
    expect(on3).toHaveLength(1);
    await b.store.revokeLease(b.leases.get('n3')!); // as if it expired
    await b.settle(all);
    expect((await b.fact('nodeStatus', 'n3'))!.state).toBe('lost');
    expect((await b.live('web')).map((r) => r.id)).toContain(on3[0]); // within the grace
    b.t += 1_000;
    await b.settle(all);
    const live = (await b.live('web')).map((r) => r.id);
    expect(live).toHaveLength(3);
    expect(live).not.toContain(on3[0]);
    expect(await b.assignments('n3')).toHaveLength(0);
    const answer = await why(b.store, 'node', 'n3');
    expect(answer.complete).toBe(true);
    expect(answer.chain.map((l) => l.decision.action)).toEqual(['lost', 'ready']);
    const replaced = live.find((id) => !(b as unknown as { x?: string }).x && !on3.includes(id))!;
    expect(replaced).toBeDefined();
    await b.register('n3', 'c');
    await b.settle(all);
    expect((await b.fact('nodeStatus', 'n3'))!.state).toBe('ready');
    expect(await b.assignments('n3')).toHaveLength(0);
  });

  test("a replica's why reaches back through its predecessor's loss to the node registration", async () => {
    const b = await cluster([['n1', 'a'], ['n2', 'b']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 2 });
    await b.settle(all);
    const gone = (await b.assignments('n2'))[0]!.replica;
    await b.store.revokeLease(b.leases.get('n2')!);
    await b.settle(all);
    b.t += 1_000;
    await b.settle(all);
    const fresh = (await b.live('web')).find((r) => r.replaces?.replica === gone)!;
    expect(fresh.replaces!.ended).toEqual({ outcome: 'lost', node: 'n2' });
    const answer = await why(b.store, 'replica', fresh.id);
    expect(answer.complete).toBe(true);
    expect(answer.chain.map((l) => `${l.decision.controller}:${l.decision.action}`)).toEqual([
      'scheduler:placed on n1',
      'replica:created',
      `replica:retired: lost with node n2`,
      'node:lost with node n2',
      'node:lost',
      'node:ready',
    ]);
    expect(answer.terminal?.fact).toBe(buildKey('node', 'n2'));
  });
});

describe('auditor', () => {
  test('a corrupted allocation opens a finding, blocks placements, and the repair is the scheduler’s decision', async () => {
    const b = await cluster([['n1', 'a']]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 1 });
    await b.settle(all);
    const alloc = (await b.fact('allocation', 'n1'))!;
    await b.store.put(buildKey('allocation', 'n1'), encodeFact('allocation', { ...alloc, used: { ...alloc.used, cpuMillis: 1 } }));
    await b.settle(all);
    const finding = (await b.fact('audit', 'n1'))!;
    expect(finding.open).toBe(true);
    await b.apply({ name: 'more', image: 'web:1', replicas: 1 });
    await b.settle(all);
    expect((await b.assignments()).filter((a) => a.service === 'more')).toHaveLength(0);
    const pending = await why(b.store, 'replica', (await b.live('more'))[0]!.id);
    expect(pending.history[0]!.decision.reasons[0]).toContain('open audit finding');
    await b.store.put(buildKey('repair', 'n1'), encodeFact('repair', { node: 'n1', requestedBy: 'alice', at: b.t, finding: finding.revision }));
    await b.settle(all);
    expect((await b.fact('audit', 'n1'))!.open).toBe(false);
    expect((await b.assignments()).filter((a) => a.service === 'more')).toHaveLength(1);
    const n1 = await why(b.store, 'node', 'n1');
    expect(n1.history.map((l) => l.decision.action)).toEqual(expect.arrayContaining(['audit finding', 'repaired allocation', 'audit finding closed']));
    expect(n1.history.find((l) => l.decision.action === 'audit finding')!.decision.reasons[0]).toMatch(/^CCA-E0402 /);
  });
});
