import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { ServerDeps } from '../deps.js';
import { diagnosticFor } from '../errors.js';
import { parseQuery, revisionParam } from '../query.js';
import { redactDeep } from '../redact.js';
import type { RequestIdEnv } from '../request-id.js';

const watchQuery = z.strictObject({
  prefix: z.string().default(''),
  /** First revision to deliver (inclusive). Omitted: from the next revision. */
  from: revisionParam.optional(),
  prevKv: z.enum(['0', '1', 'true', 'false']).optional(),
});

/**
 * The store's watch as Server-Sent Events. Each event's id is its revision, so a
 * client reconnecting with Last-Event-ID resumes exactly after what it saw. A start
 * that was compacted ends the stream with a coded `error` event.
 */
export function watchRoutes(deps: ServerDeps) {
  return new Hono<RequestIdEnv>().get('/v1/watch', (c) => {
    const q = parseQuery(c, watchQuery);
    const lastId = Number(c.req.header('last-event-id'));
    const from = Number.isSafeInteger(lastId) && lastId > 0 ? lastId + 1 : q.from;
    const requestId = c.get('requestId');
    c.header('Cache-Control', 'no-store');
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      const ac = new AbortController();
      stream.onAbort(() => ac.abort());
      deps.metrics.watchers.inc();
      const heartbeat = setInterval(() => void stream.write(': heartbeat\n\n').catch(() => ac.abort()), deps.limits.heartbeatMs);
      try {
        const watch = deps.store.watch({
          prefix: q.prefix,
          ...(from !== undefined ? { fromRevision: from } : {}),
          prevKv: q.prevKv === '1' || q.prevKv === 'true',
          signal: ac.signal,
        });
        await stream.writeSSE({ event: 'open', data: JSON.stringify({ prefix: q.prefix, from: from ?? null, requestId }) });
        for await (const batch of watch) {
          await stream.writeSSE({ id: String(batch.revision), event: 'batch', data: JSON.stringify(redactDeep(batch)) });
        }
      } catch (e) {
        if (!ac.signal.aborted) {
          await stream.writeSSE({ event: 'error', data: JSON.stringify({ error: diagnosticFor(e, requestId) }) }).catch(() => undefined);
        }
      } finally {
        clearInterval(heartbeat);
        deps.metrics.watchers.dec();
        ac.abort();
      }
    });
  });
}
