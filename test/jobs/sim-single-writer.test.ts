import { describe, expect, test } from 'vitest';
import { buildKey } from '../../core/keys.js';
import { MemoryStore } from '../../db/memory.js';
import { AttributingStore, writeProblem, type Component } from '../../jobs/sim/attributing-store.js';
import { simRandom } from '../../jobs/sim/scenarios.js';

const replicaController: Component = { kind: 'controller', name: 'replica' };
const endpoints = '{}';

describe('the single-writer check (core/keys.ts writers)', () => {
  test('a write inside the prefix core/keys.ts gives the component passes', () => {
    expect(writeProblem({ kind: 'api' }, buildKey('service', 'web'), '{}', false)).toBeUndefined();
    expect(writeProblem(replicaController, buildKey('replica', 'web', 'web-1'), '{}', false)).toBeUndefined();
    expect(writeProblem({ kind: 'controller', name: 'scheduler' }, buildKey('assigned', 'n1', 'web-1'), undefined, true)).toBeUndefined();
    expect(writeProblem({ kind: 'agent', node: 'n1' }, buildKey('observed', 'n1', 'web-1'), '{}', false)).toBeUndefined();
    expect(writeProblem(replicaController, buildKey('decision', 'replica', 'web-1', '1-x'), JSON.stringify({ controller: 'replica' }), false)).toBeUndefined();
    expect(writeProblem({ kind: 'controller', name: 'retention' }, buildKey('decision', 'replica', 'web-1', '1-x'), undefined, true)).toBeUndefined();
  });

  test('a write outside it is named: who wrote which key, and whose key it is', () => {
    expect(writeProblem(replicaController, buildKey('assigned', 'n1', 'web-1'), '{}', false)).toBe('the replica controller wrote /assigned/n1/web-1, whose writer is the scheduler');
    expect(writeProblem({ kind: 'api' }, buildKey('nodeStatus', 'n1'), '{}', false)).toBe('the API wrote /node-status/n1, whose writer is the node controller');
    expect(writeProblem({ kind: 'agent', node: 'n1' }, buildKey('observed', 'n2', 'web-1'), '{}', false)).toBe('the agent of n1 wrote /observed/n2/web-1, whose writer is the agent of <node> (node n2)');
    expect(writeProblem(replicaController, buildKey('decision', 'node', 'n1', '1-x'), JSON.stringify({ controller: 'node' }), false)).toBe('the replica controller wrote /decisions/node/n1/1-x, a record of the node controller');
    expect(writeProblem(replicaController, buildKey('decision', 'node', 'n1', '1-x'), undefined, true)).toMatch(/deleted/);
    expect(writeProblem({ kind: 'controller', name: 'retention' }, buildKey('replica', 'web', 'web-1'), undefined, true)).toBe('the retention controller deleted /replicas/web/web-1, but core/keys.ts names no prefix it writes');
    expect(writeProblem({ kind: 'api' }, '/elsewhere/x', '{}', false)).toBe('the API wrote /elsewhere/x, a key outside core/keys.ts');
  });

  test('the store wrapper checks puts, deletes and both branches of a txn', async () => {
    const seen: string[] = [];
    const s = new AttributingStore(new MemoryStore(), replicaController, (d) => seen.push(d));
    await s.put(buildKey('replica', 'web', 'web-1'), '{}');
    expect(seen).toEqual([]);
    await s.put(buildKey('endpoints', 'web'), endpoints);
    await s.delete(buildKey('allocation', 'n1'));
    await s.txn({ compare: [], success: [{ range: { key: '/x' } }], failure: [{ put: { key: buildKey('placement', 'web-1'), value: '{}' } }] });
    expect(seen).toEqual([
      'the replica controller wrote /endpoints/web, whose writer is the endpoint controller',
      'the replica controller deleted /allocations/n1, whose writer is the scheduler',
      'the replica controller wrote /placements/web-1, whose writer is the scheduler',
    ]);
  });

  test('in the simulation, a controller writing outside its prefix is a single-writer violation', async () => {
    const r = await simRandom({ seed: 7, traceLimit: 50 }, undefined, (w) => {
      const rc = w.controllers.find((c) => c.name === 'replica')!;
      const reconcile = rc.reconcile.bind(rc);
      rc.reconcile = async (ctx) => {
        await ctx.store.put(buildKey('endpoints', 'rogue'), endpoints);
        return reconcile(ctx);
      };
    });
    expect(r.ok).toBe(false);
    expect(r.violations.find((v) => v.invariant === 'single-writer')?.detail).toBe('the replica controller wrote /endpoints/rogue, whose writer is the endpoint controller');
  });
});
