import { beforeEach, expect, test } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import type { Store } from '../../db/store.js';
import { ADMIN, JOIN, securedApp } from './harness.js';

/**
 * People's requests use the store's interactive lane, the agents' the background one
 * (handlers/app.ts; the lanes themselves: test/db/postgres-write-lane.test.ts). A store with
 * lanes is stood in for by two views of one memory store that record which lane each read
 * or write came through.
 */
const seen: string[] = [];
beforeEach(() => void (seen.length = 0));

function recording(store: MemoryStore, lane: string, extra: Record<string, unknown> = {}): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop in extra) return extra[prop as string];
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (['get', 'getMany', 'range', 'txn', 'put', 'delete', 'revision', 'keepAlive', 'leasesTimeToLive', 'grantLease'].includes(String(prop))) seen.push(lane);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function lanedApp() {
  const mem = new MemoryStore();
  const lane = recording(mem, 'interactive');
  const root = recording(mem, 'background', { interactive: () => lane });
  return securedApp(root);
}

test("a person's requests read and write through the interactive lane", async () => {
  const { call } = await lanedApp();
  seen.length = 0;
  expect((await call('GET', '/v1/services', { token: ADMIN })).status).toBe(200);
  const applied = await call('POST', '/v1/apply', { token: ADMIN, text: 'service web {\n  image = "busybox:1.35"\n  replicas = 1\n}\n' });
  expect(applied.status).toBe(200);
  expect(seen.length).toBeGreaterThan(2);
  expect(new Set(seen)).toEqual(new Set(['interactive']));
});

test("an agent's requests go through the background lane, authentication included", async () => {
  const { call } = await lanedApp();
  seen.length = 0;
  await call('POST', '/v1/agent/enroll', { token: JOIN, json: { node: 'n1' } });
  expect(seen.length).toBeGreaterThan(0);
  expect(new Set(seen)).toEqual(new Set(['background']));
});

test("an agent's keepalive, its authentication included, goes through the interactive lane: the liveness the quorum rule counts does not queue behind the agents' bulk", async () => {
  const { call } = await lanedApp();
  const credential = (await (await call('POST', '/v1/agent/enroll', { token: JOIN, json: { node: 'n1' } })).json()).credential as string;
  const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: {} };
  seen.length = 0;
  const registered = await call('POST', '/v1/agent/nodes/n1/register', { token: credential, json: { ...record, leaseTtlSeconds: 30 } });
  expect(registered.status).toBe(200);
  const { lease } = (await registered.json()) as { lease: number };
  expect(new Set(seen)).toEqual(new Set(['background'])); // registering is no keepalive
  seen.length = 0;
  expect((await call('POST', '/v1/agent/nodes/n1/keepalive', { token: credential, json: { lease } })).status).toBe(200);
  expect(seen).toContain('interactive');
  expect(seen.filter((l) => l === 'interactive').length).toBeGreaterThanOrEqual(3); // auth, the node's keys, the renewal
  expect(new Set(seen)).toEqual(new Set(['interactive']));
});
