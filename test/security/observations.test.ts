import { describe, expect, test } from 'vitest';
import { buildKey, prefixOf } from '../../core/keys.js';
import { MemoryStore } from '../../db/memory.js';
import type { Store, TxnRequest } from '../../db/store.js';
import { assign, errorOf, obs, secured } from './support.js';

/** Issue 16 §1: a node credential writes observations only for replicas assigned to its node, under its tenure. */

async function cluster(store: Store = new MemoryStore()) {
  const ctx = await secured(store);
  const c1 = await ctx.enroll('n1');
  const c2 = await ctx.enroll('n2');
  const t1 = (await ctx.register('n1', c1)).tenure;
  const t2 = (await ctx.register('n2', c2)).tenure;
  await assign(ctx.store, 'n1', 'web-aaaaaaa1', t1);
  await assign(ctx.store, 'n2', 'web-aaaaaaa2', t2);
  const report = (node: string, token: string, tenure: number, observations: unknown[]) => ctx.call('POST', `/v1/agent/nodes/${node}/observations`, { json: { tenure, observations }, token });
  return { ...ctx, c1, c2, t1, t2, report };
}

describe('observations are admitted only for the node\'s own assignments', () => {
  test('its own assigned replica under its tenure is written', async () => {
    const { report, c1, t1, store } = await cluster();
    const r = await report('n1', c1, t1, [obs('web-aaaaaaa1', 'n1', t1)]);
    expect(r.status).toBe(200);
    expect(await store.get(buildKey('observed', 'n1', 'web-aaaaaaa1'))).not.toBeNull();
  });

  test('another node\'s replica, an unassigned one, or a batch holding either: coded refusal and the store unchanged', async () => {
    const { report, c1, t1, store } = await cluster();
    for (const [batch, reason] of [
      [[obs('web-aaaaaaa2', 'n1', t1, 'exited')], 'placed on node n2'],
      [[obs('web-ghost0001', 'n1', t1, 'exited')], 'not assigned'],
      // A name that is no key segment is refused like any other, not a 500.
      [[obs('web/../x', 'n1', t1, 'exited')], 'not assigned'],
      [[obs('web-aaaaaaa1', 'n1', t1), obs('web-aaaaaaa2', 'n1', t1, 'exited')], 'placed on node n2'],
    ] as const) {
      const before = await store.revision();
      const r = await report('n1', c1, t1, [...batch]);
      expect(r.status).toBe(403);
      const err = await errorOf(r);
      expect(err).toMatchObject({ code: 'CCA-E0634', params: { node: 'n1' } });
      expect(err.message).toContain(reason);
      expect(await store.revision()).toBe(before);
    }
    expect((await store.range({ prefix: prefixOf('observed', 'n1') })).kvs).toHaveLength(0);
    expect((await store.range({ prefix: prefixOf('observed', 'n2') })).kvs).toHaveLength(0);
  });

  test('a stale tenure is refused; a past tenure\'s replica may only be reported stopped (the stop confirmation)', async () => {
    const { report, c1, t1, store, register } = await cluster();
    const t1b = (await register('n1', c1)).tenure;
    expect(t1b).toBeGreaterThan(t1);
    let before = await store.revision();
    const stale = await report('n1', c1, t1, [obs('web-aaaaaaa1', 'n1', t1)]);
    expect(stale.status).toBe(409);
    expect(await errorOf(stale)).toMatchObject({ code: 'CCA-E0613' });
    expect(await store.revision()).toBe(before);
    // The assignment is of the past tenure t1: "running" under t1b is not admissible ...
    before = await store.revision();
    const running = await report('n1', c1, t1b, [obs('web-aaaaaaa1', 'n1', t1b)]);
    const err = await errorOf(running);
    expect(err).toMatchObject({ code: 'CCA-E0634' });
    expect(err.message).toContain('past tenure');
    expect(await store.revision()).toBe(before);
    // ... its stop is: that is how a returning agent proves a stateful replica stopped.
    expect((await report('n1', c1, t1b, [obs('web-aaaaaaa1', 'n1', t1b, 'exited')])).status).toBe(200);
  });
});

/** A store where the scheduler's release of a replica lands between the API's read of the assignments and its write. */
class ReleaseDuringReport extends MemoryStore {
  release: string | undefined;
  override async txn(req: TxnRequest) {
    const key = this.release;
    if (key && req.success.some((op) => 'put' in op && op.put.key.startsWith('/observed/'))) {
      this.release = undefined;
      await super.txn({ compare: [], success: [{ delete: { key } }] });
    }
    return super.txn(req);
  }
}

test('an assignment released between the read and the write: the report is judged again and refused, leaving no orphan observation', async () => {
  const store = new ReleaseDuringReport();
  const { report, c1, t1 } = await cluster(store);
  store.release = buildKey('assigned', 'n1', 'web-aaaaaaa1');
  const r = await report('n1', c1, t1, [obs('web-aaaaaaa1', 'n1', t1, 'exited')]);
  expect(await errorOf(r)).toMatchObject({ code: 'CCA-E0634' });
  expect(await store.get(buildKey('observed', 'n1', 'web-aaaaaaa1'))).toBeNull();
});
