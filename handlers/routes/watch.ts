import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { ServerDeps } from '../deps.js';
import { diagnosticFor } from '../errors.js';
import { parseQuery, revisionParam } from '../query.js';
import { redactDeep } from '../../core/keys.js';
import type { WatchBatch } from '../../db/store.js';
import { requireRole, type AuthEnv } from '../auth.js';

const watchQuery = z.strictObject({
  prefix: z.string().default(''),
  /** First revision to deliver (inclusive). Omitted: from the next revision. */
  from: revisionParam.optional(),
  prevKv: z.enum(['0', '1', 'true', 'false']).optional(),
});

/** How soon a client should come back when a pod ends its stream on shutdown. */
const RECONNECT_HINT_MS = 500;

/**
 * The store's watch as Server-Sent Events. Each event's id is its revision, so a
 * client reconnecting with Last-Event-ID resumes exactly after what it saw. A start
 * that was compacted ends the stream with a coded `error` event.
 */
export function watchRoutes(deps: ServerDeps) {
  const frames = new FrameCache();
  return new Hono<AuthEnv>().get('/v1/watch', requireRole('reader'), (c) => {
    const q = parseQuery(c, watchQuery);
    const lastId = Number(c.req.header('last-event-id'));
    const from = Number.isSafeInteger(lastId) && lastId > 0 ? lastId + 1 : q.from;
    const requestId = c.get('requestId');
    c.header('Cache-Control', 'no-store');
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      const ac = new AbortController();
      const prevKv = q.prevKv === '1' || q.prevKv === 'true';
      stream.onAbort(() => ac.abort());
      // A pod going away ends its streams itself, telling clients to come back soon (to
      // another pod, from the last id they saw) rather than leaving them to time out.
      let draining = false;
      const onDrain = () => {
        draining = true;
        ac.abort();
      };
      if (deps.draining?.aborted) onDrain();
      deps.draining?.addEventListener('abort', onDrain, { once: true });
      deps.metrics.watchers.inc();
      const heartbeat = setInterval(() => void stream.write(': heartbeat\n\n').catch(() => ac.abort()), deps.limits.heartbeatMs);
      try {
        const watch = deps.store.watch({
          prefix: q.prefix,
          ...(from !== undefined ? { fromRevision: from } : {}),
          prevKv,
          signal: ac.signal,
        });
        await stream.writeSSE({ event: 'open', data: JSON.stringify({ prefix: q.prefix, from: from ?? null, requestId }) });
        // Frames that arrive while a write is in flight go out together in the next one:
        // under load a watcher costs one socket write per burst, not one per revision.
        const pending: string[] = [];
        let wake: (() => void) | undefined;
        let ended = false;
        const writer = (async () => {
          while (!ended || pending.length > 0) {
            if (pending.length === 0) {
              await new Promise<void>((r) => (wake = r));
              continue;
            }
            await stream.write(pending.splice(0).join(''));
          }
        })();
        try {
          for await (const batch of watch) {
            pending.push(frames.frame(batch, q.prefix, prevKv));
            wake?.();
            // Keep memory bounded for a client that stopped reading: wait for the writer.
            while (pending.length > 1024 && !ac.signal.aborted) await new Promise((r) => setTimeout(r, 10));
          }
        } finally {
          ended = true;
          wake?.();
          await writer;
        }
      } catch (e) {
        if (!ac.signal.aborted) {
          await stream.writeSSE({ event: 'error', data: JSON.stringify({ error: diagnosticFor(e, requestId) }) }).catch(() => undefined);
        }
      } finally {
        clearInterval(heartbeat);
        deps.metrics.watchers.dec();
        deps.draining?.removeEventListener('abort', onDrain);
        ac.abort();
        if (draining) await stream.write(`retry: ${RECONNECT_HINT_MS}\nevent: shutdown\ndata: {}\n\n`).catch(() => undefined);
      }
    });
  });
}

/**
 * Watchers of the same prefix get the same frames: redact and serialise each batch once,
 * not once per watcher. Bounded, and keyed by what determines the bytes.
 */
class FrameCache {
  private frames = new Map<string, string>();

  frame(batch: WatchBatch, prefix: string, prevKv: boolean): string {
    const key = `${batch.revision}\u0000${prefix}\u0000${prevKv ? 1 : 0}`;
    let f = this.frames.get(key);
    if (f === undefined) {
      f = `id: ${batch.revision}\nevent: batch\ndata: ${JSON.stringify(redactDeep(batch))}\n\n`;
      this.frames.set(key, f);
      if (this.frames.size > 8192) this.frames.delete(this.frames.keys().next().value!);
    }
    return f;
  }
}
