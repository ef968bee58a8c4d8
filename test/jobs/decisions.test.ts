import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import type { Decision } from '../../core/model/facts.js';
import { controllers, nodeController, replicaController, scheduler, auditor } from '../../jobs/controllers/index.js';
import { decide, causedBy, causedByFact, evidenceOf } from '../../jobs/decisions/record.js';
import { DECISION_LIMITS } from '../../jobs/decisions/bounds.js';
import { sha256Hex } from '../../core/sha256.js';
import { planRetention, retention } from '../../jobs/decisions/retention.js';
import { why, whyText } from '../../jobs/decisions/why.js';
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

  test('a spec is cited by revision and hash: why shows it while the revision is retained, says compacted after', async () => {
    const b = new Bench();
    await b.register('n1');
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    await b.apply({ name: 'web', image: 'web:1', replicas: 1, secrets: [{ name: 'tok', value: 'hunter2', env: 'TOKEN' }] });
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    b.t += 1_000;
    await b.apply({ name: 'web', image: 'web:1', replicas: 2 });
    await b.settle([replicaController, scheduler, nodeController(), auditor]);
    const before = await why(b.store, 'service', 'web');
    expect(before.history).toHaveLength(2);
    const cited = before.history[1]!.decision.evidence[0]!;
    expect(cited).toMatchObject({ key: buildKey('service', 'web'), value: '' });
    expect(cited.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The chain's newest decision cites the current spec: read at its revision, verified.
    const newest = before.chain[0]!.decision.evidence[0]!;
    const shown = before.cited.find((c) => c.key === newest.key && c.modRevision === newest.modRevision);
    expect(shown).toMatchObject({ state: 'retained', hash: newest.hash });
    expect(JSON.parse(shown!.value!).replicas).toBe(2);
    expect(`sha256:${sha256Hex(shown!.value!)}`).toBe(newest.hash);
    expect(whyText(before)).toContain(`cited ${newest.key} @${newest.modRevision}: ${newest.bytes} bytes, retained`);

    await b.store.compact(await b.store.revision());
    await b.apply({ name: 'web', image: 'web:1', replicas: 2, env: { A: 'b' } });
    await b.store.compact(await b.store.revision());
    const a = await why(b.store, 'service', 'web');
    expect(a.complete).toBe(true);
    const old = a.cited.find((c) => c.modRevision === newest.modRevision);
    expect(old).toMatchObject({ state: 'compacted', hash: newest.hash, bytes: newest.bytes });
    expect(old!.value).toBeUndefined();
    expect(whyText(a)).toContain(`revision ${newest.modRevision} was compacted, its value is no longer kept`);
    expect(JSON.stringify(a)).not.toContain('hunter2');
  });

  test('small values are embedded as read; a hand-built large one is cited', () => {
    const small = evidenceOf({ key: '/node-status/n1', kv: { key: '/node-status/n1', value: '{"state":"ready"}', modRevision: 7, createRevision: 7, version: 1, lease: 0 } });
    expect(small).toEqual({ key: '/node-status/n1', modRevision: 7, value: '{"state":"ready"}' });
    const big = 'x'.repeat(DECISION_LIMITS.embedMaxBytes + 1);
    const w = decide({ kind: 'node', subject: 'n1', controller: 'c', action: 'a', tag: 't', at: 1, evidence: [{ key: '/audit/n1', modRevision: 3, value: big }], cause: causedByFact({ key: '/nodes/n1', modRevision: 1 }), reasons: [] });
    expect(w.decision.evidence[0]).toEqual({ key: '/audit/n1', modRevision: 3, value: '', hash: `sha256:${sha256Hex(big)}`, bytes: big.length });
  });

  test('the embedding bound is in UTF-8 bytes: a value within it in characters but over it in bytes is cited, with its byte size', () => {
    const kv = (value: string) => ({ key: '/node-status/n1', kv: { key: '/node-status/n1', value, modRevision: 7, createRevision: 7, version: 1, lease: 0 } });
    const max = DECISION_LIMITS.embedMaxBytes;
    expect(evidenceOf(kv('é'.repeat(max / 2))).value).toBe('é'.repeat(max / 2)); // exactly max bytes: embedded
    const wide = 'é'.repeat(max / 2 + 1); // max + 2 bytes in max / 2 + 1 characters
    expect(evidenceOf(kv(wide))).toEqual({ key: '/node-status/n1', modRevision: 7, value: '', hash: `sha256:${sha256Hex(wide)}`, bytes: max + 2 });
    expect(evidenceOf(kv('x'.repeat(max + 1)))).toMatchObject({ value: '', bytes: max + 1 });
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
