import { afterEach, describe, expect, test } from 'vitest';
import { AgentClient, ServerError } from '../../agent/client.js';
import { buildKey } from '../../core/keys.js';
import { defaultLimits, type ServerLimits } from '../../handlers/deps.js';
import { listen, type RunningHttp } from '../../handlers/serve.js';
import { waitFor } from '../support/wait.js';
import { ADMIN, assign, errorOf, obs, secured } from './support.js';

/**
 * Issue #20: streams per credential are capped (429 CCA-E0642 with Retry-After, the slot given
 * back when the stream ends), and a node writes observations and events only for itself and
 * at its rate (429 CCA-E0643 with Retry-After) while other nodes' writes go through.
 */

async function cluster(limits: Partial<ServerLimits>) {
  const ctx = await secured(undefined, { limits: { ...defaultLimits, heartbeatMs: 50, longPollMs: 500, ...limits } });
  const c1 = await ctx.enroll('n1');
  const c2 = await ctx.enroll('n2');
  const t1 = (await ctx.register('n1', c1)).tenure;
  const t2 = (await ctx.register('n2', c2)).tenure;
  for (let i = 0; i < 5; i++) await assign(ctx.store, 'n1', `web-aaaaaaa${i}`, t1);
  await assign(ctx.store, 'n2', 'web-bbbbbbb1', t2);
  return { ...ctx, c1, c2, t1, t2 };
}

const servers: RunningHttp[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

describe('streams per credential', () => {
  test('a token over its cap of watches is refused with 429 CCA-E0642 and Retry-After; a closed stream gives its slot back', async () => {
    const { call, newToken } = await cluster({ streamsPerToken: 2 });
    const reader = (await newToken({ role: 'reader' })).token;
    const watch = () => call('GET', '/v1/watch?prefix=/services/', { token: reader });
    const first = await watch();
    const second = await watch();
    expect([first.status, second.status]).toEqual([200, 200]);
    const refused = await watch();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    const e = await errorOf(refused);
    expect(e.code).toBe('CCA-E0642');
    expect(e.message).toContain(`holds 2 watch streams`);
    // Another credential is not affected.
    expect((await call('GET', '/v1/watch?prefix=/services/', { token: ADMIN })).status).toBe(200);
    // Closing one stream frees its slot.
    await first.body!.cancel();
    const third = await waitFor('a slot freed by the closed stream', async () => {
      const r = await watch();
      if (r.status === 200) return r;
      await r.body?.cancel();
      return undefined;
    });
    expect(third.status).toBe(200);
    await second.body!.cancel();
    await third.body!.cancel();
  });

  test('a node credential over its cap of long polls is refused; a long poll that ends gives its slot back', async () => {
    const { app, call, c1, c2 } = await cluster({ streamsPerNode: 2 });
    const poll = (signal?: AbortSignal) =>
      app.request('/v1/agent/nodes/n1/assignments?after=1000000&waitMs=60000', { headers: { authorization: `Bearer ${c1}` }, ...(signal ? { signal } : {}) });
    const now = (token = c1, node = 'n1') => call('GET', `/v1/agent/nodes/${node}/assignments?after=1000000&waitMs=0`, { token });
    const held = new AbortController();
    const other = new AbortController();
    const polls = [Promise.resolve(poll(held.signal)).catch(() => undefined), Promise.resolve(poll(other.signal)).catch(() => undefined)];
    const refused = await waitFor('the third poll refused', async () => {
      const r = await now();
      return r.status === 429 ? r : undefined;
    });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect((await errorOf(refused)).code).toBe('CCA-E0642');
    // The other node's agent is not affected.
    expect((await now(c2, 'n2')).status).toBe(200);
    held.abort();
    await waitFor('a slot freed by the ended long poll', async () => (await now()).status === 200);
    other.abort();
    await Promise.all(polls);
  });
});

describe('node writes', () => {
  test('a node writes only its own replicas\' observations and its own events: others are 403', async () => {
    const { call, c1, t1, t2 } = await cluster({});
    const other = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: t1, observations: [obs('web-bbbbbbb1', 'n1', t1)] }, token: c1 });
    expect(other.status).toBe(403);
    expect((await errorOf(other)).code).toBe('CCA-E0634');
    const events = await call('POST', '/v1/agent/nodes/n2/events', { json: { tenure: t2, events: [{ node: 'n2', kind: 'x', message: 'm', at: 1 }] }, token: c1 });
    expect(events.status).toBe(403);
    expect((await errorOf(events)).code).toBe('CCA-E0606');
  });

  test('a node flooding observations is refused (429 CCA-E0643, Retry-After) while another node\'s writes go through', async () => {
    // 0.5 a second, bursts of 3: the first report of 5 goes through (into debt), the next waits ~4 s.
    const { call, store, c1, c2, t1, t2 } = await cluster({ nodeWrites: { ratePerSecond: 0.5, burst: 3 } });
    const report = (node: string, token: string, tenure: number, observations: unknown[]) => call('POST', `/v1/agent/nodes/${node}/observations`, { json: { tenure, observations }, token });
    const five = [0, 1, 2, 3, 4].map((i) => obs(`web-aaaaaaa${i}`, 'n1', t1));
    expect((await report('n1', c1, t1, five)).status).toBe(200);
    const flooded = await report('n1', c1, t1, [obs('web-aaaaaaa0', 'n1', t1, 'failed')]);
    expect(flooded.status).toBe(429);
    expect(Number(flooded.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const e = await errorOf(flooded);
    expect(e.code).toBe('CCA-E0643');
    expect(e.params).toMatchObject({ node: 'n1', ratePerSecond: 0.5, burst: 3 });
    // Nothing of the refused report was written.
    const kv = await store.get(buildKey('observed', 'n1', 'web-aaaaaaa0'));
    expect(JSON.parse(kv!.value).state).toBe('running');
    // Events count too.
    const ev = await call('POST', '/v1/agent/nodes/n1/events', { json: { tenure: t1, events: [{ node: 'n1', kind: 'x', message: 'm', at: 1 }] }, token: c1 });
    expect(ev.status).toBe(429);
    // Another node's writes still go through.
    expect((await report('n2', c2, t2, [obs('web-bbbbbbb1', 'n2', t2)])).status).toBe(200);
    expect(await store.get(buildKey('observed', 'n2', 'web-bbbbbbb1'))).not.toBeNull();
  });

  test('a node\'s volume reports count against the same rate (429 CCA-E0643); nothing of a refused one is written', async () => {
    const { call, store, c1, t1 } = await cluster({ nodeWrites: { ratePerSecond: 0.5, burst: 3 } });
    const volume = (name: string) => ({ service: 'db', volume: name, state: 'ready', path: `/v/${name}`, sizeBytes: 1, at: 1 });
    const report = (volumes: unknown[]) => call('POST', '/v1/agent/nodes/n1/observed-volumes', { json: { tenure: t1, volumes }, token: c1 });
    expect((await report(['a', 'b', 'c', 'd'].map(volume))).status).toBe(200);
    const flooded = await report(['a', 'b', 'c', 'd', 'e'].map(volume));
    expect(flooded.status).toBe(429);
    expect((await errorOf(flooded)).code).toBe('CCA-E0643');
    expect(await store.get(buildKey('observedVolume', 'n1', 'db', 'e'))).toBeNull();
    // The rate is one per node: its observations now wait too.
    const obsReport = await call('POST', '/v1/agent/nodes/n1/observations', { json: { tenure: t1, observations: [obs('web-aaaaaaa0', 'n1', t1)] }, token: c1 });
    expect(obsReport.status).toBe(429);
  });

  test('the agent client reads the refusal\'s Retry-After (what its reporter waits by)', async () => {
    const { app, c1, t1 } = await cluster({ nodeWrites: { ratePerSecond: 0.5, burst: 1 } });
    const http = await listen(app, { port: 0 });
    servers.push(http);
    const client = new AgentClient(http.url, 'n1');
    client.credential = c1;
    await client.observations(t1, [obs('web-aaaaaaa0', 'n1', t1)] as never);
    await client.observations(t1, [obs('web-aaaaaaa0', 'n1', t1)] as never).catch(() => undefined);
    const e = await client.observations(t1, [obs('web-aaaaaaa0', 'n1', t1)] as never).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ServerError);
    const refused = e as ServerError;
    expect(refused.status).toBe(429);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
  });
});

describe('long polls bounded in bytes', () => {
  test('a node\'s assignments come in pages of at most assignmentsPageBytes, read at one revision; the agent client joins them whole', async () => {
    const { app, call, c1, store, t1 } = await cluster({ assignmentsPageBytes: 2048 });
    for (let i = 5; i < 20; i++) await assign(store, 'n1', `web-aaaaaa${String(i).padStart(2, '0')}`, t1);
    const first = await call('GET', '/v1/agent/nodes/n1/assignments?after=0', { token: c1 });
    const body = (await first.json()) as { revision: number; more?: boolean; cursor?: string; assignments: { replica: string }[] };
    expect(body.more).toBe(true);
    expect(JSON.stringify(body.assignments).length).toBeLessThanOrEqual(2048);
    expect(body.cursor).toBe(body.assignments.at(-1)!.replica);
    // A later page needs the first page's revision with its cursor.
    expect((await call('GET', `/v1/agent/nodes/n1/assignments?cursor=${body.cursor}`, { token: c1 })).status).toBe(400);
    // A write after the first page is not seen by the later ones (one revision for all).
    await assign(store, 'n1', 'web-zzzzzzz9', t1);
    const http = await listen(app, { port: 0 });
    servers.push(http);
    const client = new AgentClient(http.url, 'n1');
    client.credential = c1;
    const whole = await client.assignments(0, 0);
    expect(whole.assignments.map((a) => a.replica)).toContain('web-zzzzzzz9');
    expect(whole.assignments).toHaveLength(21);
    const pages: string[] = [];
    let cursor = body.cursor;
    while (cursor !== undefined) {
      const r = (await (await call('GET', `/v1/agent/nodes/n1/assignments?revision=${body.revision}&cursor=${cursor}`, { token: c1 })).json()) as typeof body;
      pages.push(...r.assignments.map((a) => a.replica));
      cursor = r.more ? r.cursor : undefined;
    }
    const atFirst = [...body.assignments.map((a) => a.replica), ...pages];
    expect(atFirst).toHaveLength(20);
    expect(atFirst).not.toContain('web-zzzzzzz9');
    expect([...atFirst].sort()).toEqual(atFirst);
  });
});

