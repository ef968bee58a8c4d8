import { expect, test } from 'vitest';
import { buildKey, encodeFact, parseKey, prefixOf } from '../../core/keys.js';
import { assignmentMaxBytes, storedSpecMaxBytes } from '../../core/model/spec-limits.js';
import { netAddrsMaxBytes, netPolicyMaxBytes, networkRulesMaxBytes } from '../../core/model/network-limits.js';
import { limits, utf8Length } from '../../db/keyspace.js';
import { controllers } from '../../jobs/controllers/index.js';
import { decisionMaxBytes } from '../../jobs/decisions/bounds.js';
import { why } from '../../jobs/decisions/why.js';
import { applyServices } from '../../handlers/apply.js';
import { newSecretKey, parseKeyring, SecretBox } from '../../handlers/secret-box.js';
import { largestSpec } from '../support/largest-spec.js';
import { Bench } from './harness.js';

const box = new SecretBox(parseKeyring(newSecretKey('k1'), 'test'));

/**
 * Issue 20's proof: the largest spec the model accepts, with volumes, 32 replicas of it on one
 * node, and a repair of that node (whose decision once embedded every assignment's spec):
 * every controller keeps moving, no write is refused (Bench.settle calls each step directly,
 * so a refused write fails the test), and every value written stays under its stated bound.
 */
test('32 replicas of the largest spec on one node, then a repair of the node: every controller keeps moving', { timeout: 180_000 }, async () => {
  const b = new Bench();
  await b.register('n1');
  const all = controllers({ retention: false });
  await b.settle(all);
  await applyServices(b.store, { kind: 'specs', services: [largestSpec('big', 32)], prune: false }, false, box);
  await b.settle(all, 40);
  expect((await b.assignments('n1')).filter((a) => a.service === 'big')).toHaveLength(32);

  // Damage the node's allocation record: the auditor opens a finding, the node takes nothing new.
  const alloc = (await b.fact('allocation', 'n1'))!;
  await b.store.put(buildKey('allocation', 'n1'), encodeFact('allocation', { ...alloc, used: { cpuMillis: 1, memoryBytes: 1 }, replicas: alloc.replicas.slice(1) }));
  await b.settle(all);
  const finding = (await b.fact('audit', 'n1'))!;
  expect(finding.open).toBe(true);

  // `cca repair node n1`: the scheduler rebuilds the allocation from its 32 assignments.
  await b.store.put(buildKey('repair', 'n1'), encodeFact('repair', { node: 'n1', requestedBy: 'admin', at: b.t, finding: finding.revision }));
  b.t += 1_000;
  await b.settle(all, 40);
  expect((await b.fact('audit', 'n1'))!.open).toBe(false);
  const repair = await why(b.store, 'node', 'n1');
  const repaired = repair.history.find((h) => h.decision.action === 'repaired allocation')!.decision;
  expect(repaired.evidence.filter((e) => parseKey(e.key)?.kind === 'assigned' && e.hash !== undefined)).toHaveLength(32);

  // A second, small service still converges on the repaired node.
  await applyServices(b.store, { kind: 'specs', services: [{ name: 'small', image: 'web:1', replicas: 2, resources: { cpuMillis: 10, memoryBytes: 1024 * 1024 } }], prune: false }, false, box);
  b.t += 1_000;
  await b.settle(all, 40);
  expect((await b.assignments('n1')).filter((a) => a.service === 'small')).toHaveLength(2);
  expect((await b.assignments('n1')).filter((a) => a.service === 'big')).toHaveLength(32);

  // Every value written stays under the bound stated for its kind.
  const everything = (await b.store.range({ prefix: '/' })).kvs;
  let largestDecision = 0;
  for (const kv of everything) {
    const bytes = utf8Length(kv.value);
    expect(bytes, kv.key).toBeLessThan(limits.maxValueBytes);
    const kind = parseKey(kv.key)?.kind;
    if (kind === 'decision') largestDecision = Math.max(largestDecision, bytes);
    if (kind === 'service') expect(bytes, kv.key).toBeLessThanOrEqual(storedSpecMaxBytes());
    if (kind === 'assigned') expect(bytes, kv.key).toBeLessThanOrEqual(assignmentMaxBytes());
    if (kind === 'network') expect(bytes, kv.key).toBeLessThanOrEqual(networkRulesMaxBytes());
    if (kind === 'netPolicy') expect(bytes, kv.key).toBeLessThanOrEqual(netPolicyMaxBytes());
    if (kind === 'netAddrs') expect(bytes, kv.key).toBeLessThanOrEqual(netAddrsMaxBytes());
  }
  expect(largestDecision).toBeLessThanOrEqual(decisionMaxBytes());
  // Measured, not a threshold on time: the repair decision cites 32 specs in a few kB.
  expect(largestDecision).toBeLessThan(32 * 1024);
  expect(everything.filter((kv) => kv.key.startsWith(prefixOf('volume')))).not.toHaveLength(0);
});
