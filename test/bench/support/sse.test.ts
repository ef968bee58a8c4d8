import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile, record, merge, type Histogram } from '../../../bench/support/latency.js';
import { SseScanner } from '../../../bench/support/sse.js';

/** Frames as the pod writes them: an open event, batches with large data lines, heartbeats. */
function stream(ids: number[], dataBytes: number): { text: string; frames: { id: string | undefined; event: string | undefined }[] } {
  let text = `event: open\ndata: {"prefix":"/bench/"}\n\n`;
  const frames: { id: string | undefined; event: string | undefined }[] = [{ id: undefined, event: 'open' }];
  for (const id of ids) {
    text += `: heartbeat\n\nid: ${id}\nevent: batch\ndata: {"revision":${id},"v":"${'x'.repeat(dataBytes)}"}\n\n`;
    frames.push({ id: String(id), event: 'batch' });
  }
  return { text, frames };
}

function scan(chunks: Buffer[]): { id: string | undefined; event: string | undefined }[] {
  const got: { id: string | undefined; event: string | undefined }[] = [];
  const s = new SseScanner((f) => got.push(f));
  for (const c of chunks) s.push(c);
  return got;
}

describe('the load generator’s streaming SSE scanner', () => {
  it('reads the same frames however the bytes are split into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 1e9 }), { maxLength: 20 }), fc.integer({ min: 0, max: 300 }), fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 50 }), (ids, dataBytes, cuts) => {
        const { text, frames } = stream(ids, dataBytes);
        const bytes = Buffer.from(text);
        const chunks: Buffer[] = [];
        let at = 0;
        for (let i = 0; at < bytes.length; i++) {
          const n = cuts[i % cuts.length]!;
          chunks.push(bytes.subarray(at, at + n));
          at += n;
        }
        expect(scan(chunks)).toEqual(frames);
      }),
    );
  });

  it('takes one whole buffer and byte-at-a-time alike, CRLF too', () => {
    const text = 'id: 7\r\nevent: batch\r\ndata: {}\r\n\nid: 8\nevent: batch\ndata: {}\n\n';
    const expected = [{ id: '7', event: 'batch' }, { id: '8', event: 'batch' }];
    expect(scan([Buffer.from(text)])).toEqual(expected);
    expect(scan([...Buffer.from(text)].map((b) => Buffer.from([b])))).toEqual(expected);
  });
});

describe('latency histograms', () => {
  it('add up across processes and give nearest-rank percentiles', () => {
    const a: Histogram = {};
    const b: Histogram = {};
    for (let i = 1; i <= 50; i++) record(a, i);
    for (let i = 51; i <= 100; i++) record(b, i);
    const h = merge(merge({}, a), b);
    expect(percentile(h, 50)).toBe(51);
    expect(percentile(h, 99)).toBe(100);
    expect(percentile({}, 50)).toBeNaN();
  });
});
