import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { buildKey, encodeFact } from '../../core/keys.js';
import { validateService } from '../../core/model/index.js';
import { LogRelay } from '../../handlers/log-relay.js';
import { JOIN, securedApp } from './harness.js';

/**
 * A handler that leaves a listener on its request's abort signal keeps that request, its
 * context and its response alive for good: undici's Request holds the signal's listeners in
 * a FinalizationRegistry whose target they reach (bench:soak's pod grew ~4.5 MiB a minute at
 * 100 agents). Every long poll must leave the signal as it found it, however the poll ends.
 */
describe('long polls leave no listener on the request signal', () => {
  async function node() {
    const ctx = await securedApp();
    const credential = (await (await ctx.call('POST', '/v1/agent/enroll', { json: { node: 'n1' }, token: JOIN })).json()).credential as string;
    const record = { name: 'n1', zone: 'a', capacity: { cpuMillis: 2000, memoryBytes: 2 ** 30 }, images: { 'busybox:1.35': 'sha256:abc' } };
    const reg = (await (await ctx.call('POST', '/v1/agent/nodes/n1/register', { json: record, token: credential })).json()) as { tenure: number };
    /** A GET with a signal of our own, so the test can look at it after the answer. */
    const poll = async (path: string) => {
      const request = new Request(`http://pod${path}`, { headers: { authorization: `Bearer ${credential}` }, signal: new AbortController().signal });
      const res = await ctx.app.request(request);
      expect(res.status).toBe(200);
      return { body: (await res.json()) as { revision: number; changed?: boolean }, listeners: getEventListeners(request.signal, 'abort').length };
    };
    return { ...ctx, poll, tenure: reg.tenure };
  }

  test.each(['assignments', 'network', 'volumes'])('%s: a poll that times out', async (route) => {
    const { poll } = await node();
    const first = await poll(`/v1/agent/nodes/n1/${route}`);
    const timedOut = await poll(`/v1/agent/nodes/n1/${route}?after=${first.body.revision}&waitMs=30`);
    expect(timedOut.body.changed).toBe(false);
    expect(timedOut.listeners).toBe(0);
  });

  test('assignments: a poll a change answers', async () => {
    const { poll, store, tenure } = await node();
    const first = await poll('/v1/agent/nodes/n1/assignments');
    const spec = validateService({ name: 'web', image: 'busybox:1.35' });
    if (!spec.ok) throw new Error('fixture');
    const waiting = poll(`/v1/agent/nodes/n1/assignments?after=${first.body.revision}&waitMs=5000`);
    await new Promise((r) => setTimeout(r, 50));
    await store.put(
      buildKey('assigned', 'n1', 'web-1'),
      encodeFact('assigned', { replica: 'web-1', service: 'web', node: 'n1', tenure, resources: { cpuMillis: 100, memoryBytes: 1 }, specRevision: 1, spec: spec.value, placedAt: 0 }),
    );
    const answered = await waiting;
    expect(answered.body.changed).toBe(true);
    expect(answered.listeners).toBe(0);
  });

  test('log requests: a poll that times out', async () => {
    const { poll } = await node();
    const r = await poll('/v1/agent/nodes/n1/log-requests?waitMs=30');
    expect(r.listeners).toBe(0);
  });

  test('a client log request the agent answers, or that times out', async () => {
    const relay = new LogRelay();
    const client = new AbortController();
    const asked = relay.request('n1', { replica: 'web-1', tail: 10, follow: false, previous: false }, 5_000, client.signal);
    const [req] = await relay.take('n1', 1_000, new AbortController().signal);
    // The agent's delivery resolves once the client is done with the stream.
    const delivered = relay.deliver('n1', req!.id, new ReadableStream({ start: (c) => c.close() }));
    (await asked).done(true);
    await delivered;
    expect(getEventListeners(client.signal, 'abort')).toHaveLength(0);

    const late = new AbortController();
    await expect(relay.request('n1', { replica: 'web-1', tail: 10, follow: false, previous: false }, 20, late.signal)).rejects.toMatchObject({ code: 'CCA-E0670' });
    expect(getEventListeners(late.signal, 'abort')).toHaveLength(0);
  });
});
