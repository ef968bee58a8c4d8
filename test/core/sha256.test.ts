import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { sha256Hex, sha256OfText } from '../../core/sha256.js';

/** The pure hash (controllers, `why`, the console) against Node's OpenSSL one: decision evidence cites values by it. */
describe('core/sha256.ts', () => {
  const cases = [
    '',
    'abc',
    'x'.repeat(55), // the padding's length field still fits the block
    'x'.repeat(56), // it does not: one more block
    'x'.repeat(64),
    'é'.repeat(300), // two UTF-8 bytes per unit
    '日本語のテキスト',
    '😀 astral: a surrogate pair is four bytes',
    JSON.stringify({ endpoints: Array.from({ length: 3000 }, (_, i) => ({ replica: `web-${i}`, address: '10.0.0.1', ports: { http: 8080 } })) }),
  ];

  test.each(cases.map((c) => [c.length, c] as const))('a %i-unit string: the same hex and UTF-8 length as node:crypto and Buffer', (_, text) => {
    const { hex, bytes } = sha256OfText(text);
    expect(hex).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    expect(bytes).toBe(Buffer.byteLength(text, 'utf8'));
    expect(sha256Hex(text)).toBe(hex);
  });
});
