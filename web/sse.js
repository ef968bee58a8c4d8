// Server-Sent Events over fetch: EventSource cannot send an Authorization header, and a
// token must not go in the URL. Parses the text/event-stream format incrementally.

/** Yields { event, data, id } for each dispatched event; comments (heartbeats) yield { comment }. */
export async function* readEvents(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', onAbort);
  let buf = '';
  let ev = { event: 'message', data: [], id: undefined };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        if (buf[nl] === '\r' && nl === buf.length - 1) break; // a CRLF split across chunks: wait for the LF
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (ev.data.length) yield { event: ev.event, data: ev.data.join('\n'), id: ev.id };
          ev = { event: 'message', data: [], id: undefined };
        } else if (line.startsWith(':')) {
          yield { comment: line.slice(1).trim() };
        } else {
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'event') ev.event = val;
          else if (field === 'data') ev.data.push(val);
          else if (field === 'id') ev.id = val;
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    reader.releaseLock?.();
  }
}
