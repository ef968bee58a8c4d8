import { afterEach, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { validateService } from '../../core/model/index.js';
import { MemoryStore } from '../../db/memory.js';
import { StoreMirror, type MirrorReadWay } from '../../db/mirror.js';
import type { Store, WatchRequest } from '../../db/store.js';
import { STEP_MIRROR_PREFIXES } from '../../jobs/step-mirror.js';
import { ADMIN, JOIN, securedApp } from './harness.js';

const opened: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

/**
 * A pod whose read mirror lags: its feed delivers nothing after the listing (a stuck watch,
 * or simply a pod that has not heard of the last commits yet). The agent routes read it
 * as a pod does (ServerDeps.agentView).
 */
async function laggingPod(catchUpMs = 50, opts: { knowsOwnCommits?: boolean } = {}) {
  const store = new MemoryStore();
  opened.push(store);
  const stuck = new Proxy(store, {
    get(target, prop) {
      if (prop === 'watch') {
        return (req: WatchRequest) => ({
          async *[Symbol.asyncIterator]() {
            await new Promise<void>((resolve) => req.signal?.addEventListener('abort', () => resolve(), { once: true }));
          },
        });
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Store;
  const ways = new Map<MirrorReadWay, number>();
  let mirror: StoreMirror | undefined;
  // The pod believes it is current (its known head is the mirror's): only `atLeast` raises the
  // floor; with `knowsOwnCommits`, so do the revisions of the writes made through it, as a
  // Postgres pod's known head does (its batcher's commits).
  let known = 0;
  const raise = (r: unknown) => {
    const revision = (r as { revision?: unknown }).revision;
    if (typeof revision === 'number' && revision > known) known = revision;
    return r;
  };
  const own = opts.knowsOwnCommits
    ? (new Proxy(store, {
        get(target, prop) {
          const v: unknown = Reflect.get(target, prop, target);
          if (typeof v !== 'function') return v;
          const f = (v as (...a: unknown[]) => unknown).bind(target);
          return prop === 'txn' || prop === 'put' || prop === 'delete' ? async (...a: unknown[]) => raise(await f(...a)) : f;
        },
      }) as Store)
    : store;
  // Until the mirror starts (after the enrollment and registration below), the store.
  const ctx = await securedApp(own, { agentView: (atLeast) => (mirror ? mirror.reads(store, Math.max(atLeast, known)) : store) });
  const credential = (await (await ctx.call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()).credential as string;
  const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: { 'busybox:1.35': 'sha256:abc' } };
  const reg = (await (await ctx.call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json()) as { tenure: number };
  mirror = new StoreMirror(stuck, { prefixes: STEP_MIRROR_PREFIXES, catchUpMs, onRead: (w) => ways.set(w, (ways.get(w) ?? 0) + 1) }).start();
  opened.push(mirror);
  await expect.poll(() => mirror!.status().state).toBe('live');
  const spec = validateService({ name: 'web', image: 'busybox:1.35' });
  if (!spec.ok) throw new Error('fixture');
  /** An assignment the mirror never hears of: the agent saw it through another pod. */
  const assign = (id: string) =>
    store.put(buildKey('assigned', 'n1', id), encodeFact('assigned', { replica: id, service: 'web', node: 'n1', tenure: reg.tenure, resources: { cpuMillis: 1, memoryBytes: 1 }, specRevision: 1, spec: spec.value, placedAt: 0 }));
  const observation = (id: string) => ({ replica: id, service: 'web', node: 'n1', tenure: reg.tenure, state: 'running', at: 1 });
  return { ...ctx, credential, reg, ways, assign, observation };
}

test("a pod whose read mirror lacks an assignment still admits its agent's report of it: a refusal is confirmed on the store", async () => {
  const { call, store, credential, reg, ways, assign, observation } = await laggingPod();
  await assign('web-1');
  const r = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [observation('web-1')] }, token: credential });
  expect(r.status, await r.clone().text()).toBe(200);
  expect(await store.get(buildKey('observed', 'n1', 'web-1'))).not.toBeNull();
  expect(ways.get('mirror') ?? 0).toBeGreaterThan(0); // judged on the mirror first
  // A replica assigned nowhere is still refused, on the store's word.
  const refused = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [observation('web-9')] }, token: credential });
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('CCA-E0634');
  // A new registration the mirror never hears of: the old tenure's report is refused all the same.
  const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: { 'busybox:1.35': 'sha256:abc' } };
  expect((await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).status).toBe(200);
  const stale = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: reg.tenure, observations: [observation('web-1')] }, token: credential });
  expect(stale.status).toBe(409);
  expect(((await stale.json()) as { error: { code: string } }).error.code).toBe('CCA-E0613');
});

test('an assignments answer is never older than the revision the agent already has', async () => {
  const { call, store, credential, assign } = await laggingPod();
  await assign('web-1');
  const after = await store.revision();
  const r = (await (await call('GET', `/v1/agent/nodes/n1/assignments?after=${after}&waitMs=0`, { token: credential })).json()) as { revision: number; assignments: { replica: string }[] };
  expect(r.revision).toBeGreaterThanOrEqual(after);
  expect(r.assignments.map((a) => a.replica)).toEqual(['web-1']);
});

test("a node credential the pod's read mirror has not heard of is honoured on the store's word; a wrong one is refused", async () => {
  const { call, ways } = await laggingPod();
  // Enrolled after the mirror stopped hearing: through another pod, as far as this one knows.
  const enrolled = await call('POST', '/v1/agent/enroll', { json: { node: 'n2' }, token: JOIN });
  const credential = ((await enrolled.json()) as { credential: string }).credential;
  const record = { name: 'n2', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 } };
  const r = await call('POST', '/v1/agent/nodes/n2/register', { json: record, token: credential });
  expect(r.status, await r.clone().text()).toBe(200);
  expect(ways.get('mirror') ?? 0).toBeGreaterThan(0); // looked up in the mirror first
  const forged = `${credential.slice(0, -4)}AAAA`;
  expect((await call('POST', '/v1/agent/nodes/n2/register', { json: record, token: forged })).status).toBe(401);
});

test('a node credential reset through a pod is refused by it at once, though its read mirror lags', async () => {
  const { call, credential } = await laggingPod(50, { knowsOwnCommits: true });
  const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 } };
  expect((await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).status).toBe(200);
  expect((await call('POST', '/v1/nodes/n1/reset', { token: ADMIN })).status).toBe(200);
  // The mirror still holds the credential; the pod knows it committed past the mirror.
  expect((await call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).status).toBe(401);
  expect((await call('POST', '/v1/agent/nodes/n1/keepalive', { json: {}, token: credential })).status).toBe(401);
});
