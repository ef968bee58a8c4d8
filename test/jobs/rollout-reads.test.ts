import { expect, test } from 'vitest';
import { buildKey, prefixOf } from '../../core/keys.js';
import type { RangeRequest, Store } from '../../db/store.js';
import { auditor, nodeController, replicaController, rolloutController, scheduler } from '../../jobs/controllers/index.js';
import { Bench } from './harness.js';

/** Ranges a step asks for, by prefix (a whole-prefix read of every node's facts shows here). */
function recording(store: Store): { store: Store; prefixes: string[] } {
  const prefixes: string[] = [];
  const proxy = new Proxy(store, {
    get(target, p) {
      if (p === 'range') return (r: RangeRequest) => (prefixes.push(r.prefix ?? r.key ?? r.start ?? ''), target.range(r));
      const v = (target as unknown as Record<string | symbol, unknown>)[p];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: proxy, prefixes };
}

test('on a first deployment (no roll recorded), a rollout step reads the records only, not every replica fact', async () => {
  const b = new Bench();
  await b.register('n1');
  const all = [replicaController, scheduler, nodeController({ lostGraceMs: 1_000 }), auditor];
  await b.settle(all);
  await b.apply({ name: 'web', image: 'web:1', replicas: 40, resources: { cpuMillis: 10 } });
  await b.settle(all);
  const r = recording(b.store);
  await rolloutController.reconcile({ store: r.store, now: b.t, random: () => 0.5, subject: 'web' });
  expect(r.prefixes.some((p) => p.startsWith(prefixOf('observed')) || p.startsWith(prefixOf('assigned')))).toBe(false);
  expect(r.prefixes).toContain(prefixOf('replica', 'web'));
  expect(await b.store.get(buildKey('rollout', 'web'))).toBeNull();
});
