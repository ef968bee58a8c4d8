import { describe, expect, it } from 'vitest';
import { buildKey, layout, prefixOf, type KeyKind, type KeyParams } from '../../core/keys.js';
import { route, type Controller } from '../../jobs/controller.js';
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

/** What the in-process driver and the simulation run for these changed keys. */
function woken(keys: string[]): string[] {
  const table = new WakeTable(controllers);
  table.changed(keys, 0);
  return [...table.take(0).map((s) => s.key), ...[...table.fanouts].map((c) => `${c.name}:*`)].sort();
}

/** What graphile-worker is asked to run for them. */
function enqueued(keys: string[]): string[] {
  return jobsForChanges(controllers, keys)
    .map((j) => {
      // The payload must name the same step as the job's key, or the dedup key and the run disagree.
      expect(j.key).toBe(j.task === 'cca-fanout' ? `${j.payload.controller}:*` : j.payload.subject === undefined ? j.payload.controller : `${j.payload.controller}:${j.payload.subject}`);
      return j.key;
    })
    .sort();
}

describe('route: one key-to-step routing for every driver', () => {
  it.each(sampleKeys)('the wake table and graphile job routing wake the same steps for %s', (key) => {
    expect(enqueued([key])).toEqual(woken([key]));
  });

  it('the sample keys reach every controller, so the comparison above covers them all', () => {
    const reached = new Set(sampleKeys.flatMap((k) => route(controllers, k).map((r) => r.controller.name)));
    const watching = controllers.filter((c) => c.watches.length > 0); // the rest wake on timers only
    expect(watching.length).toBeGreaterThan(5);
    expect([...reached].sort()).toEqual(watching.map((c) => c.name).sort());
    expect(enqueued(sampleKeys)).toEqual(woken(sampleKeys));
  });

  it('routes a keyed controller to its subject, or to a fan-out when the key names none', () => {
    const keyed: Controller = {
      name: 'keyed',
      watches: ['/a/'],
      subjectOf: (k) => k.split('/')[2] || undefined,
      reconcile: async () => ({}),
    };
    const global: Controller = { name: 'global', watches: ['/a/x'], reconcile: async () => ({}) };
    const brief = (key: string) => route([keyed, global], key).map((r) => (r.fanout ? `${r.controller.name}:*` : `${r.controller.name}:${r.subject ?? '-'}`));
    expect(brief('/a/x')).toEqual(['keyed:x', 'global:-']);
    expect(brief('/a/')).toEqual(['keyed:*']);
    expect(brief('/b/x')).toEqual([]);
  });
});
