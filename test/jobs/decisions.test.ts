import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { Decision } from '../../core/model/facts.js';
import { controllers, nodeController, replicaController, scheduler, auditor } from '../../jobs/controllers/index.js';
import { decide, causedBy, causedByFact } from '../../jobs/decisions/record.js';
import { planRetention, retention } from '../../jobs/decisions/retention.js';
import { why } from '../../jobs/decisions/why.js';
import { isCcaError } from '../../core/diagnostics/error.js';
import { Bench } from './harness.js';

const d = (subject: string, at: number, tag: string, cause: Decision['cause'], action = tag): { key: string; decision: Decision } => {
  const w = decide({ kind: 'replica', subject, controller: 'c', action, tag, at, evidence: [], cause: cause!, reasons: [] });
  return { key: w.key, decision: w.decision };
};

describe('why', () => {
  test('unknown subjects are a coded diagnostic', async () => {
    const b = new Bench();
    await expect(why(b.store, 'replica', 'nope')).rejects.toSatisfy((e) => isCcaError(e, 'CCA-E0406'));
  });

  test('a chain cut by a missing decision is truncated, naming the link', async () => {
    const b = new Bench();
    const root = d('r1', 1, 'a', causedByFact({ key: '/services/web', modRevision: 3 }));
    const mid = d('r1', 2, 'b', causedBy(root.key));
    const top = d('r2', 3, 'c', causedBy(mid.key));
    for (const x of [mid, top]) await b.store.put(x.key, encodeFact('decision', x.decision));
    const a = await why(b.store, 'replica', 'r2');
    expect(a.complete).toBe(false);
    expect(a.truncated).toBe(`${root.key} is no longer kept (evicted by retention)`);
    await b.store.put(root.key, encodeFact('decision', root.decision));
    const full = await why(b.store, 'replica', 'r2');
    expect(full.complete).toBe(true);
    expect(full.terminal).toMatchObject({ fact: '/services/web', modRevision: 3 });
    expect(full.chain.map((l) => l.decision.action)).toEqual(['c', 'b', 'a']);
  });

  test('evidence survives the cited keys changing and being compacted', async () => {
    const b = new Bench();
    await b.register('n1');
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 1, secrets: [{ name: 'tok', value: 'hunter2', env: 'TOKEN' }] });
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    b.t += 1_000;
    await b.apply({ name: 'web', image: 'web:1', replicas: 2 });
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    await b.store.compact(await b.store.revision());
    const a = await why(b.store, 'service', 'web');
    expect(a.complete).toBe(true);
    expect(a.history).toHaveLength(2);
    const first = a.history[1]!.decision;
    expect(first.evidence[0]!.key).toBe(buildKey('service', 'web'));
    expect(JSON.parse(first.evidence[0]!.value).replicas).toBe(1);
    expect(first.evidence[0]!.value).not.toContain('hunter2'); // secrets redacted in evidence
  });
});

describe('retention', () => {
  test("never evicts a live subject's newest decision of each kind, nor anything a kept chain needs", () => {
    const old = d('dead', 1, 'x', causedByFact({ key: '/services/web', modRevision: 1 }));
    const list = [old];
    let prev = old;
    for (let i = 2; i <= 30; i++) {
      const x = d('live', i, `t${i}`, causedBy(prev.key), i === 2 ? 'created' : 'pending');
      list.push(x);
      prev = x;
    }
    const evict = new Set(planRetention(list, (_k, s) => s === 'live', 10_000_000, { keepPerSubject: 5, maxAgeMs: 1_000 }));
    // The newest five are kept, and their chain back to the first: nothing is evicted.
    expect(evict.size).toBe(0);
    // Without a chain, only the newest per (controller, action) and the newest five stay.
    const flat = list.map((x) => ({ ...x, decision: { ...x.decision, cause: causedByFact({ key: '/services/web', modRevision: 1 }) } }));
    const evicted = new Set(planRetention(flat, (_k, s) => s === 'live', 10_000_000, { keepPerSubject: 5, maxAgeMs: 1_000 }));
    const kept = flat.filter((x) => !evicted.has(x.key)).map((x) => x.decision.at);
    expect(kept).toEqual([2, 26, 27, 28, 29, 30]);
    expect(evicted.has(old.key)).toBe(true); // a gone subject past the age limit
  });

  test('as a step: deletes what the plan evicts and sleeps until its next round', async () => {
    const b = new Bench();
    for (let i = 0; i < 3; i++) {
      const x = d('gone', i, `t${i}`, causedByFact({ key: '/services/web', modRevision: 1 }));
      await b.store.put(x.key, encodeFact('decision', x.decision));
    }
    b.t = 10_000_000;
    const wake = await b.step(retention({ everyMs: 60_000, maxAgeMs: 1_000 }));
    expect(wake.at).toBe(b.t + 60_000);
    expect((await b.store.range({ prefix: '/decisions/' })).count).toBe(0);
  });

  test('the full controller list includes retention unless turned off', () => {
    expect(controllers().map((c) => c.name)).toEqual(['replica', 'scheduler', 'node', 'auditor', 'endpoints', 'rollout', 'autoscaler', 'network', 'storage', 'retention']);
    expect(controllers({ retention: false }).map((c) => c.name)).not.toContain('retention');
  });
});
