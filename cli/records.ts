import { messageOf } from '../core/diagnostics/index.js';

/**
 * A streamed body cut into records at `separator` (SSE frames, NDJSON lines): one reader
 * loop for every stream the CLI follows. It ends when the body ends or `signal` aborts (the
 * caller tells the two apart); a read that fails otherwise goes to `broke`, which throws the
 * caller's own coded error. The reader is always released.
 */
export async function* records(body: ReadableStream<Uint8Array>, separator: string, signal: AbortSignal, broke: (reason: string) => never, normalise = false): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (signal.aborted) return;
        broke(messageOf(e));
      }
      if (chunk.done) return;
      const text = decoder.decode(chunk.value, { stream: true });
      buf += normalise ? text.replace(/\r\n/g, '\n') : text;
      let i: number;
      while ((i = buf.indexOf(separator)) >= 0) {
        const record = buf.slice(0, i);
        buf = buf.slice(i + separator.length);
        yield record;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
