import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { auditor, nodeController, replicaController, scheduler } from '../../jobs/controllers/index.js';
import { why } from '../../jobs/decisions/why.js';
import { listFacts } from '../../jobs/facts.js';
import { Bench } from './harness.js';

const all = [replicaController, scheduler, nodeController({ lostGraceMs: 1_000 }), auditor];

/**
 * What one scheduler step writes per placement, built from parts shared across the step
 * (each spec's JSON, each node's evidence): the records must read back exactly as if
 * each were built and validated alone.
 */
describe('placement records built from per-step parts', () => {
  test('every assignment decodes to its replica, node and full spec, whatever spec it shares', async () => {
    const b = new Bench();
    for (const [n, z] of [['n1', 'a'], ['n2', 'b']] as const) await b.register(n, z);
    await b.settle(all);
    await b.apply({ name: 'web', image: 'web:1', replicas: 3, resources: { cpuMillis: 100 }, env: { A: '"quoted"\\' } });
    await b.apply({ name: 'api', image: 'web:1', replicas: 2, resources: { cpuMillis: 200 } });
    await b.settle(all);
    const specs = new Map((await listFacts(b.store, 'service', prefixOf('service'))).map((s) => [s.value.name, s.value]));
    const assigned = (await b.store.range({ prefix: prefixOf('assigned') })).kvs;
    expect(assigned).toHaveLength(5);
    for (const kv of assigned) {
      const a = decodeFact('assigned', kv.key, kv.value);
      expect(kv.key).toBe(buildKey('assigned', a.node, a.replica));
      expect(a.spec).toEqual(specs.get(a.service));
      expect(a.resources).toEqual(specs.get(a.service)!.resources);
      expect(JSON.parse(kv.value)).toEqual({ ...a });
    }
  });

  test('a placement cites its node record by hash, once per node, and why shows the record it read', async () => {
    const b = new Bench();
    await b.register('n1', 'a');
    await b.settle(all);
    await b.apply({ name: 'web', image: 'web:1', replicas: 2, resources: { cpuMillis: 100 } });
    await b.settle(all);
    const node = (await b.store.get(buildKey('node', 'n1')))!;
    for (const r of await b.live('web')) {
      const answer = await why(b.store, 'replica', r.id);
      const placed = answer.history.find((l) => l.decision.action === 'placed on n1')!.decision;
      const cited = placed.evidence.find((e) => e.key === buildKey('node', 'n1'))!;
      expect(cited).toMatchObject({ modRevision: node.modRevision, value: '', bytes: node.value.length });
      expect(answer.cited).toContainEqual(expect.objectContaining({ key: node.key, state: 'retained', value: node.value }));
      // The rest of what the placement read is still embedded as read.
      expect(placed.evidence.find((e) => e.key === buildKey('nodeStatus', 'n1'))!.value).toBe((await b.store.get(buildKey('nodeStatus', 'n1')))!.value);
    }
  });
});
