import { afterAll, expect, test } from 'vitest';
import { startServer, type RunningServer } from '../../server/start.js';
import { ADMIN, JOIN } from '../handlers/harness.js';
import { createTestDatabase } from '../support/databases.js';
import { freePort } from '../support/postgres-server.js';

/**
 * Two pods on one Postgres, each authenticating node credentials from its read mirror
 * (handlers/auth.ts principalOf): a credential enrolled through one pod works on the other at
 * once (a miss is asked of the store), and a reset holds at once on the pod it went through and
 * on the other as soon as that pod hears of it.
 */
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function pod(store: string): Promise<{ url: string; server: RunningServer }> {
  const server = await startServer({ store, port: await freePort(), host: '127.0.0.1', openReads: false, adminToken: ADMIN, joinToken: JOIN, workers: 0, version: 'test' });
  cleanups.push(() => server.stop());
  return { url: server.url, server };
}

const call = (url: string, method: string, path: string, token: string, json?: unknown) =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(json ? { 'content-type': 'application/json' } : {}) }, ...(json ? { body: JSON.stringify(json) } : {}) });

test('a node credential is honoured on every pod at once, and a reset holds at once where it was made and within the watch poll elsewhere', async () => {
  const db = await createTestDatabase('creds');
  cleanups.push(db.drop);
  const a = await pod(db.url);
  const b = await pod(db.url);
  const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 1000, memoryBytes: 2 ** 30 } };
  for (let round = 0; round < 5; round++) {
    // Enrolled through A, used through B straight away: B's mirror may not have it yet.
    const enrolled = await call(a.url, 'POST', '/v1/agent/enroll', JOIN, { node: 'n1' });
    expect(enrolled.status, await enrolled.clone().text()).toBe(200);
    const credential = ((await enrolled.json()) as { credential: string }).credential;
    const registered = await call(b.url, 'POST', '/v1/agent/nodes/n1/register', credential, record);
    expect(registered.status, await registered.clone().text()).toBe(200);
    // Reset through B: B refuses the credential on the very next request, A soon after.
    expect((await call(b.url, 'POST', '/v1/nodes/n1/reset', ADMIN)).status).toBe(200);
    expect((await call(b.url, 'POST', '/v1/agent/nodes/n1/register', credential, record)).status).toBe(401);
    await expect.poll(async () => (await call(a.url, 'POST', '/v1/agent/nodes/n1/register', credential, record)).status, { timeout: 5_000, interval: 50 }).toBe(401);
  }
  // And the pods read credentials from their mirrors (the metric counts each way).
  const metrics = await (await fetch(`${b.url}/metrics`)).text();
  expect(Number(/cca_mirror_reads_total\{way="mirror"\} (\d+)/.exec(metrics)?.[1] ?? 0)).toBeGreaterThan(0);
});
