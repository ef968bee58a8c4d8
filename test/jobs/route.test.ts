import { describe, expect, it } from 'vitest';
import { buildKey, encodeFact, layout, prefixOf, type KeyKind, type KeyParams } from '../../core/keys.js';
import { ROUTER_SEGMENTS, changesOfEvents, route, router, type Change, type Controller, type Route } from '../../jobs/controller.js';
import type { Observation } from '../../core/model/facts.js';
import { controllers as allControllers } from '../../jobs/controllers/index.js';
import { jobsForChanges } from '../../jobs/job-hook.js';
import { WakeTable } from '../../jobs/wake-table.js';

const controllers = allControllers();

/** A key of every kind in the key table, its segments filled in (`node` → `node-1`). */
const sampleKeys = (Object.keys(layout) as KeyKind[]).flatMap((kind) => {
  const params = layout[kind].params.map((p) => `${p}-1`) as unknown as KeyParams<typeof kind>;
  // The key itself, and the kind's bare prefix (a range delete's key, or a subject-less change).
  return [buildKey(kind, ...params), prefixOf(kind)];
});

/** Every sample key as a put and as a deletion: some controllers wake on deletions only. */
const sampleChanges: Change[] = sampleKeys.flatMap((key) => [{ key, deleted: false }, { key, deleted: true }]);

/** What the in-process driver and the simulation run for these changes. */
function woken(changes: Change[]): string[] {
  const table = new WakeTable(controllers);
  table.changed(changes, 0);
  return [...table.take(0).map((s) => s.key), ...[...table.fanouts].map((c) => `${c.name}:*`)].sort();
}

/** What graphile-worker is asked to run for them. */
function enqueued(changes: Change[]): string[] {
  return jobsForChanges(controllers, changes)
    .map((j) => {
      // The payload must name the same step as the job's key, or the dedup key and the run disagree.
      expect(j.key).toBe(j.task === 'cca-fanout' ? `${j.payload.controller}:*` : j.payload.subject === undefined ? j.payload.controller : `${j.payload.controller}:${j.payload.subject}`);
      return j.key;
    })
    .sort();
}

describe('route: one key-to-step routing for every driver', () => {
  it.each(sampleChanges)('the wake table and graphile job routing wake the same steps for %o', (change) => {
    expect(enqueued([change])).toEqual(woken([change]));
  });

  it('the sample keys reach every controller, so the comparison above covers them all', () => {
    const reached = new Set(sampleChanges.flatMap((c) => route(controllers, c).map((r) => r.controller.name)));
    const watching = controllers.filter((c) => c.watches.length > 0); // the rest wake on timers only
    expect(watching.length).toBeGreaterThan(5);
    expect([...reached].sort()).toEqual(watching.map((c) => c.name).sort());
    expect(enqueued(sampleChanges)).toEqual(woken(sampleChanges));
  });

  it('routes a keyed controller to its subject, or to a fan-out when the key names none', () => {
    const keyed: Controller = {
      name: 'keyed',
      watches: ['/a/'],
      subjectOf: (k) => k.split('/')[2] || undefined,
      reconcile: async () => ({}),
    };
    const global: Controller = { name: 'global', watches: ['/a/x'], reconcile: async () => ({}) };
    const brief = (key: string) => route([keyed, global], { key, deleted: false }).map((r) => (r.fanout ? `${r.controller.name}:*` : `${r.controller.name}:${r.subject ?? '-'}`));
    expect(brief('/a/x')).toEqual(['keyed:x', 'global:-']);
    expect(brief('/a/')).toEqual(['keyed:*']);
    expect(brief('/b/x')).toEqual([]);
  });

  it('wakes a controller on a deletion only under its watchesDeletes, in both routings', () => {
    const reaper: Controller = { name: 'reaper', watches: ['/a/'], watchesDeletes: ['/b/'], reconcile: async () => ({}) };
    const both = (change: Change) => {
      const table = new WakeTable([reaper]);
      table.changed([change], 0);
      const a = table.take(0).map((s) => s.key);
      expect(jobsForChanges([reaper], [change]).map((j) => j.key)).toEqual(a);
      return a;
    };
    expect(both({ key: '/b/x', deleted: false })).toEqual([]);
    expect(both({ key: '/b/x', deleted: true })).toEqual(['reaper']);
    expect(both({ key: '/a/x', deleted: false })).toEqual(['reaper']);
  });

  it('the node controller is not woken by a placement, and is by a release', () => {
    const node = controllers.find((c) => c.name === 'node')!;
    const key = buildKey('assigned', 'n1', 'web-1');
    expect(route([node], { key, deleted: false })).toEqual([]);
    expect(route([node], { key, deleted: true }).map((r) => r.controller.name)).toEqual(['node']);
  });

  it('the router asks fewer controllers and answers as route does, for every key and odd watch prefixes', () => {
    const named = (rs: Route[]) => rs.map((r) => (r.fanout ? `${r.controller.name}:*` : `${r.controller.name}:${r.subject ?? '-'}`));
    // Watches that are not whole first segments: shorter, longer, without a slash, empty.
    const odd: Controller[] = [
      { name: 'short', watches: ['/as'], reconcile: async () => ({}) },
      { name: 'long', watches: ['/assigned/n1/'], watchesDeletes: ['/nodes/n'], reconcile: async () => ({}) },
      { name: 'bare', watches: ['/trigger'], reconcile: async () => ({}) },
      { name: 'all', watches: [''], reconcile: async () => ({}) },
      { name: 'keyed', watches: ['/services/'], subjectOf: (k) => k.split('/')[2] || undefined, reconcile: async () => ({}) },
    ];
    const lists = [controllers, odd, [...controllers, ...odd]];
    const keys = [...sampleKeys, '/trigger', '/triggered/x', '/', '', '/as', '/assigned/n1/x', '/assigned/n2/x', '/nodes/n1', '/nodes/', '/x'];
    for (const list of lists) {
      const routes = router(list);
      for (const key of keys) {
        for (const deleted of [false, true]) expect(named(routes({ key, deleted }))).toEqual(named(route(list, { key, deleted })));
      }
    }
    // More first segments than it remembers: the rest are routed the long way, alike.
    const routes = router(odd);
    for (let i = 0; i < ROUTER_SEGMENTS + 50; i++) {
      const key = `/as${i}/x`;
      expect(named(routes({ key, deleted: false }))).toEqual(named(route(odd, { key, deleted: false })));
    }
  });
});

describe('changes a controller passes over (`ignores`)', () => {
  const key = buildKey('observed', 'n1', 'web-00000001');
  const report = (o: Partial<Observation> = {}) =>
    encodeFact('observed', { replica: 'web-00000001', service: 'web', node: 'n1', tenure: 3, state: 'running', at: 1_000, health: { liveness: 'passing', readiness: 'passing' }, usage: { cpuMillis: 10, memoryBytes: 2 ** 20 }, ...o });
  const woke = (change: Change) => {
    const e = enqueued([change]);
    expect(e).toEqual(woken([change])); // the graphile hook and the wake table agree
    return e;
  };
  const all = ['endpoints:web', 'network', 'replica:web', 'rollout:web'];

  it('a report that moved only its usage figure and time wakes none of the steps that watch reports', () => {
    expect(woke({ key, deleted: false, before: report(), after: report({ at: 31_000, usage: { cpuMillis: 250, memoryBytes: 2 ** 21 } }) })).toEqual([]);
  });

  it('any other change to a report wakes them all, as does one whose earlier value is not known', () => {
    expect(woke({ key, deleted: false, before: report(), after: report({ at: 2_000, state: 'exited', exitCode: 1 }) })).toEqual(all);
    expect(woke({ key, deleted: false, before: report(), after: report({ health: { liveness: 'passing', readiness: 'failing' } }) })).toEqual(all);
    expect(woke({ key, deleted: false, before: report(), after: report({ address: '10.0.0.7' }) })).toEqual(all);
    expect(woke({ key, deleted: false, after: report({ at: 31_000 }) })).toEqual(all);
    expect(woke({ key, deleted: false })).toEqual(all);
    expect(woke({ key, deleted: true })).toEqual(all);
    expect(woke({ key, deleted: false, before: 'not json', after: report() })).toEqual(all);
  });

  it('changesOfEvents gives a put its values only when the first event on the key had the one before; a deletion wins', () => {
    const kv = (k: string, value: string) => ({ key: k, value, createRevision: 1, modRevision: 2, version: 1, lease: 0 });
    expect(
      changesOfEvents([
        { type: 'put', kv: kv('/a', '2'), prevKv: kv('/a', '1') },
        { type: 'put', kv: kv('/a', '3'), prevKv: kv('/a', '2') },
        { type: 'put', kv: kv('/b', '1') },
        { type: 'put', kv: kv('/b', '2'), prevKv: kv('/b', '1') },
        { type: 'put', kv: kv('/c', '2'), prevKv: kv('/c', '1') },
        { type: 'delete', kv: kv('/c', ''), prevKv: kv('/c', '2') },
        { type: 'put', kv: kv('/c', '3') },
      ]),
    ).toEqual([
      { key: '/a', deleted: false, before: '1', after: '3' },
      { key: '/b', deleted: false },
      { key: '/c', deleted: true },
    ]);
  });
});
