import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError, lookup } from '../../core/diagnostics/index.js';
import { tieSignals } from '../../core/abort.js';
import { buildKey, decodeFact, segmentProblem } from '../../core/keys.js';
import { LOG_LIMITS, logFrameSchema, logsQuerySchema, parseSince } from '../../core/model/index.js';
import { requireNode, requireRole, type AuthEnv } from '../auth.js';
import type { ServerDeps } from '../deps.js';
import { LogRelay } from '../log-relay.js';
import { parseQuery } from '../query.js';
import type { PodLimits } from '../limits/pod-limits.js';

const pollQuery = z.strictObject({ waitMs: z.coerce.number().int().min(0).max(60_000).optional() });
const idParam = z.string().regex(/^[0-9a-f]{32}$/);

/** The path of the agent's streamed answer: exempt from the JSON body limit, bounded by LOG_LIMITS here instead. */
export const LOG_STREAM_PATH = /^\/v1\/agent\/nodes\/[^/]+\/log-requests\/[^/]+\/stream$/;

/** Slack over LOG_LIMITS.maxBytes for the frames' JSON around the text. */
const FRAMING_SLACK = 1024 * 1024;

/** The node a replica's output is on: where it is placed. */
async function nodeOf(deps: ServerDeps, replica: string): Promise<string> {
  if (segmentProblem(replica) !== undefined) throw new CcaError('CCA-E0672', { replica, reason: 'that is not a replica id' });
  const key = buildKey('placement', replica);
  const kv = await deps.store.get(key);
  if (!kv) throw new CcaError('CCA-E0672', { replica, reason: 'it is placed on no node (unknown, still pending, or released)' });
  return decodeFact('placement', key, kv.value).node;
}

/** Split the first line (the agent's serving/refused frame) off the stream. */
async function firstLine(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<{ line: string; rest: Uint8Array }> {
  let buf = new Uint8Array(0);
  for (;;) {
    const nl = buf.indexOf(0x0a);
    if (nl >= 0) return { line: new TextDecoder().decode(buf.subarray(0, nl)), rest: buf.subarray(nl + 1) };
    if (buf.length > 64 * 1024) return { line: '', rest: buf };
    const { value, done } = await reader.read();
    if (done) return { line: new TextDecoder().decode(buf), rest: new Uint8Array(0) };
    const next = new Uint8Array(buf.length + value.length);
    next.set(buf);
    next.set(value, buf.length);
    buf = next;
  }
}

/**
 * `GET /v1/replicas/{id}/logs` and the agent's side of it: a log request waits in the relay
 * until the node's agent takes it through its long poll and answers with a streamed POST,
 * which is piped to the client (docs/agent.md, "Logs", says why this path).
 */
export function logRoutes(deps: ServerDeps, pod: PodLimits, relay = new LogRelay()) {
  const app = new Hono<AuthEnv>();

  app.get('/v1/replicas/:id/logs', requireRole('reader'), async (c) => {
    const replica = c.req.param('id');
    const q = parseQuery(c, logsQuerySchema);
    const sinceMs = q.since === undefined ? undefined : parseSince(q.since, Date.now());
    if (q.since !== undefined && sinceMs === undefined) throw new CcaError('CCA-E0603', { where: 'query parameter since', reason: `"${q.since}" is neither a duration (10m, 90s, 2h) nor an RFC 3339 time` });
    const node = await nodeOf(deps, replica);
    const req = { replica, follow: q.follow ?? false, previous: q.previous ?? false, ...(q.tail === undefined ? {} : { tail: q.tail }), ...(sinceMs === undefined ? {} : { sinceMs: Math.max(0, sinceMs) }) };
    const release = pod.slots.hold(c.get('principal'));
    let stream: ReadableStream<Uint8Array>;
    try {
      stream = await openRelay();
    } catch (e) {
      release();
      throw e;
    }
    async function openRelay(): Promise<ReadableStream<Uint8Array>> {
      const { body, done: relayDone } = await relay.request(node, req, LOG_LIMITS.answerWithinMs, c.req.raw.signal);
      // The stream holds one of the reader's stream slots until it ends, however it ends.
      const done = (ok: boolean) => {
        relayDone(ok);
        release();
      };
      const reader = body.getReader();
      const { line, rest } = await firstLine(reader);
      let first: z.infer<typeof logFrameSchema> | undefined;
      try {
        first = logFrameSchema.parse(JSON.parse(line));
      } catch {
        first = undefined;
      }
      if (!first || !('serving' in first || 'refused' in first)) {
        done(false);
        await reader.cancel().catch(() => undefined);
        throw new CcaError('CCA-E0673', { node, replica, reason: `its first line is ${JSON.stringify(line.slice(0, 200))}` });
      }
      if ('refused' in first) {
        done(false);
        await reader.cancel().catch(() => undefined);
        const d = first.refused;
        // The agent's own diagnostic, rebuilt from the registry: an unknown code is no answer.
        if (!lookup(d.code)) throw new CcaError('CCA-E0673', { node, replica, reason: `it refused with unknown code ${d.code}` });
        throw new CcaError(d.code, d.params);
      }
      const head = new TextEncoder().encode(`${line}\n`);
      let relayed = 0;
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(head);
          if (rest.length > 0) controller.enqueue(rest);
        },
        async pull(controller) {
          try {
            const { value, done: ended } = await reader.read();
            relayed += value?.length ?? 0;
            // The agent bounds what it sends; the server does not trust that alone.
            if (ended || relayed > LOG_LIMITS.maxBytes + FRAMING_SLACK) {
              controller.close();
              done(true);
              if (!ended) await reader.cancel().catch(() => undefined);
              return;
            }
            controller.enqueue(value);
          } catch {
            // The agent's upload broke off: the client sees the stream end without an `end` frame.
            controller.close();
            done(false);
          }
        },
        async cancel() {
          done(false);
          await reader.cancel().catch(() => undefined);
        },
      });
      return stream;
    }
    return new Response(stream, { headers: { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' } });
  });

  app.get('/v1/agent/nodes/:node/log-requests', requireNode('read log requests'), async (c) => {
    const q = parseQuery(c, pollQuery);
    const release = pod.slots.hold(c.get('principal'));
    // Tied, not AbortSignal.any: the pod's closing signal lives as long as the pod (core/abort.ts).
    const tie = tieSignals(deps.closing ? [c.req.raw.signal, deps.closing] : [c.req.raw.signal]);
    let requests;
    try {
      requests = await relay.take(c.req.param('node'), q.waitMs ?? deps.limits.longPollMs, tie.signal);
    } finally {
      tie.done();
      release();
    }
    return c.json({ requests });
  });

  app.post('/v1/agent/nodes/:node/log-requests/:id/stream', requireNode('answer log requests'), async (c) => {
    const id = idParam.safeParse(c.req.param('id'));
    if (!id.success) throw new CcaError('CCA-E0671', { id: c.req.param('id'), node: c.req.param('node') });
    const body = c.req.raw.body;
    if (!body) throw new CcaError('CCA-E0603', { where: 'body', reason: 'a log stream is expected' });
    await relay.deliver(c.req.param('node'), id.data, body);
    return c.json({ ok: true });
  });

  return app;
}
