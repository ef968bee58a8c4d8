import { Hono } from 'hono';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import type { ServerDeps } from '../deps.js';
import { diagnosticFor } from '../errors.js';
import { parseQuery, revisionParam } from '../query.js';
import { requireRole, type AuthEnv } from '../auth.js';
import type { PodLimits } from '../limits/pod-limits.js';
import { FrameCache } from '../watch/frame-cache.js';
import { FlushTick } from '../watch/flush-tick.js';
import { pumpFrames, type Cut } from '../watch/pump.js';
import { FEED_KEEPS, SharedFeeds } from '../watch/shared-feeds.js';
import { askThroughOutage } from '../../db/watch-feed.js';
import type { FrameLine } from '../watch/frame-line.js';
import { WatchQueue } from '../watch/watch-queue.js';
import { respondSse, sseEvent, type SseSink } from '../watch/sse-sink.js';

const watchQuery = z.strictObject({
  prefix: z.string().default(''),
  /** First revision to deliver (inclusive). Omitted: from the next revision. */
  from: revisionParam.optional(),
  prevKv: z.enum(['0', '1', 'true', 'false']).optional(),
});

/** How soon a client should come back when a pod ends its stream on shutdown. */
const RECONNECT_HINT_MS = 500;
/** Frames kept for watchers of the same prefix to share, at most (and `limits.frameCacheBytes`). */
const CACHED_FRAMES = 8192;

/**
 * The store's watch as Server-Sent Events. Each event's id is its revision, so a
 * client reconnecting with Last-Event-ID resumes exactly after what it saw. A start
 * that was compacted ends the stream with a coded `error` event; so does a watcher cut
 * at its byte bound (CCA-E0640/E0641, naming the revision to resume from).
 */
export function watchRoutes(deps: ServerDeps, pod: PodLimits) {
  const frames = new FrameCache({ maxFrames: CACHED_FRAMES, maxBytes: deps.limits.frameCacheBytes });
  const tick = new FlushTick(deps.limits.watchFlushMs);
  const feeds = new SharedFeeds(deps.store, (b, v) => frames.frame(b, v.prefix, v.prevKv), FEED_KEEPS);
  deps.metrics.trackWatchFeeds(() => feeds.stats());
  return new Hono<AuthEnv>().get('/v1/watch', requireRole('reader'), (c) => {
    const q = parseQuery(c, watchQuery);
    const lastId = Number(c.req.header('last-event-id'));
    const from = Number.isSafeInteger(lastId) && lastId > 0 ? lastId + 1 : q.from;
    const requestId = c.get('requestId');
    const prevKv = q.prevKv === '1' || q.prevKv === 'true';
    // Refused (429) before anything streams; given back however the stream ends.
    const release = pod.slots.hold(c.get('principal'));
    try {
      return respondSse(c, async (sink) => {
        try {
          await serve(sink, { prefix: q.prefix, from, prevKv, requestId });
        } finally {
          release();
        }
      });
    } catch (e) {
      release();
      throw e;
    }
  });

  async function serve(stream: SseSink, w: { prefix: string; from: number | undefined; prevKv: boolean; requestId: string }) {
    const ac = new AbortController();
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
    const queue = new WatchQueue(pod.watchBytes, deps.limits.watchQueueBytes);
    // A heartbeat only on an idle stream: one that is sending needs none, and a stuck one must not pile them up.
    const heartbeat = setInterval(() => {
      if (queue.idle()) void stream.write(': heartbeat\n\n');
    }, deps.limits.heartbeatMs);
    let cut: Cut | undefined;
    let line: FrameLine | undefined;
    try {
      // "From now" is fixed before the client hears it is watching: a write it makes after
      // the open event is always delivered. A watch opened while the store is away opens
      // when it is back (heartbeats meanwhile), as one already open waits the outage out.
      const head = await askThroughOutage(() => deps.store.revision(), ac.signal);
      line = feeds.line({ prefix: w.prefix, prevKv: w.prevKv }, w.from ?? head + 1, head);
      await stream.write(sseEvent({ event: 'open', data: JSON.stringify({ prefix: w.prefix, from: w.from ?? null, requestId: w.requestId }) }));
      cut = await pumpFrames(stream, line, {
        queue,
        stallMs: deps.limits.watchStallMs,
        signal: ac.signal,
        beforeWrite: () => tick.next(),
      });
    } catch (e) {
      if (!ac.signal.aborted) {
        await stream.write(sseEvent({ event: 'error', data: JSON.stringify({ error: diagnosticFor(e, w.requestId) }) })).catch(() => undefined);
      }
    } finally {
      clearInterval(heartbeat);
      line?.close();
      deps.metrics.watchers.dec();
      deps.draining?.removeEventListener('abort', onDrain);
      ac.abort();
      if (cut) await endCut(stream, cut, w.requestId);
      queue.close();
      if (draining) await stream.write(`retry: ${RECONNECT_HINT_MS}\nevent: shutdown\ndata: {}\n\n`).catch(() => undefined);
    }
  }

  /**
   * Tell a cut watcher where to resume. Its client may read nothing at all: then the event
   * cannot get through, and after `watchCutGraceMs` the connection itself is closed.
   */
  async function endCut(stream: SseSink, cut: Cut, requestId: string) {
    deps.metrics.watchCuts.inc({ bound: cut.bound });
    const error =
      cut.bound === 'watcher'
        ? new CcaError('CCA-E0640', { queuedBytes: cut.queuedBytes, limitBytes: deps.limits.watchQueueBytes, stallMs: deps.limits.watchStallMs, resumeFrom: cut.resumeFrom })
        : new CcaError('CCA-E0641', { podBytes: pod.watchBytes.used, limitBytes: deps.limits.watchPodBytes, stallMs: deps.limits.watchStallMs, resumeFrom: cut.resumeFrom });
    const sent = stream.write(sseEvent({ event: 'error', id: String(cut.resumeFrom - 1), data: JSON.stringify({ error: diagnosticFor(error, requestId) }) })).then(() => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), deps.limits.watchCutGraceMs)));
    const delivered = await Promise.race([sent, late]);
    clearTimeout(timer);
    if (!delivered) stream.destroy();
  }
}
