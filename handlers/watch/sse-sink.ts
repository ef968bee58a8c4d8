import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';

/**
 * Where a watch stream's text goes. On Node it is the response's socket itself: Hono's
 * `streamSSE` passes every write through a TransformStream, a ReadableStream and a
 * TextEncoder before @hono/node-server copies it to the same socket, and with a thousand
 * watchers that machinery was a third of the pod's CPU per event (docs/benchmarks.md,
 * Server). Elsewhere (`app.request()` in tests, other runtimes) the web stream is used.
 */
export interface SseSink {
  /** Resolves once the text is handed to the socket (its bytes stop counting against the watcher). */
  write(text: string): Promise<void>;
  /** The client went away. */
  onAbort(fn: () => void): void;
  /** Close the connection now, whatever is unsent (a cut watcher that reads nothing). */
  destroy(): void;
}

/** One event in the stream's wire format (`data` is one line: JSON). */
export function sseEvent(e: { event: string; data: string; id?: string }): string {
  return `${e.id !== undefined ? `id: ${e.id}\n` : ''}event: ${e.event}\ndata: ${e.data}\n\n`;
}

/** Headers every watch stream answers with, beside those middleware set (X-Request-Id). */
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-store',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
} as const;

/**
 * Answer with an event stream fed by `serve`. Returns the Response Hono hands on: on Node a
 * marker that the response was already written (`RESPONSE_ALREADY_SENT`).
 */
export function respondSse(c: Context, serve: (sink: SseSink) => Promise<void>): Response {
  const res = nodeResponse(c);
  if (!res) {
    for (const [k, v] of Object.entries(SSE_HEADERS)) c.header(k, v);
    return streamSSE(c, (stream) =>
      serve({
        write: (text) => stream.write(text).then(() => undefined),
        onAbort: (fn) => stream.onAbort(fn),
        destroy: () => stream.abort(),
      }),
    );
  }
  // What middleware put on the context so far (X-Request-Id), with the stream's own headers.
  const headers: Record<string, string> = {};
  c.newResponse(null).headers.forEach((v, k) => (headers[k] = v));
  for (const [k, v] of Object.entries(SSE_HEADERS)) headers[k.toLowerCase()] = v;
  res.writeHead(200, headers);
  res.flushHeaders();
  const sink = nodeSink(res);
  void serve(sink)
    .catch(() => undefined)
    .finally(() => res.end());
  return RESPONSE_ALREADY_SENT;
}

function nodeResponse(c: Context): ServerResponse | undefined {
  const env = c.env as { outgoing?: ServerResponse } | undefined;
  const res = env?.outgoing;
  return res && typeof res.writeHead === 'function' && !res.headersSent ? res : undefined;
}

function nodeSink(res: ServerResponse): SseSink {
  return {
    write: (text) =>
      new Promise<void>((resolve) => {
        if (res.destroyed || res.writableEnded) return resolve();
        // The callback runs once the chunk reached the socket, or with an error when the
        // connection is gone: either way its bytes are no longer held for this watcher.
        res.write(text, () => resolve());
      }),
    onAbort: (fn) => {
      if (res.destroyed) return fn();
      res.once('close', fn);
    },
    destroy: () => res.destroy(),
  };
}
