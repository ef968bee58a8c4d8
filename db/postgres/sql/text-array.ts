/** Postgres's type id of `text`, which a binary text[] names as its element type. */
const TEXT_OID = 25;

/**
 * A text[] parameter in Postgres's binary array format, for a batch's keys and values: pg
 * sends a Buffer parameter as binary, and the server then copies each element (array_recv)
 * instead of parsing a literal character by character and unescaping every `\"` of the JSON
 * values (a 1,000-value batch of ~770 kB: the statement's call 17 → 9 ms, 3–4 ms of it
 * Postgres's CPU; docs/benchmarks.md). Each string goes as UTF-8, as pg sends a text
 * parameter (a lone surrogate becomes U+FFFD either way); the statement must cast the
 * parameter to `text[]`, whose element type this names.
 */
export function binaryTextArray(values: readonly string[]): Buffer {
  let size = 20;
  for (const v of values) size += 4 + Buffer.byteLength(v, 'utf8');
  const out = Buffer.allocUnsafe(size);
  // Header: one dimension, no NULLs, element type, the dimension's length and lower bound.
  out.writeInt32BE(1, 0);
  out.writeInt32BE(0, 4);
  out.writeInt32BE(TEXT_OID, 8);
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16);
  let at = 20;
  for (const v of values) {
    const n = out.write(v, at + 4, 'utf8');
    out.writeInt32BE(n, at);
    at += 4 + n;
  }
  if (at !== size) throw new Error(`binary text[]: wrote ${at} of ${size} bytes`);
  return out;
}

/**
 * A Postgres bigint[] / int[] literal (`{1,2}`): pg's own would quote and escape each number
 * as a string. Only integers are written here (revisions, versions, lease ids).
 */
export function integerArrayLiteral(values: readonly number[]): string {
  for (const v of values) if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer in an integer array: ${v}`);
  return `{${values.join(',')}}`;
}

/** A Postgres bool[] literal (`{t,f}`). */
export function booleanArrayLiteral(values: readonly boolean[]): string {
  return `{${values.map((v) => (v ? 't' : 'f')).join(',')}}`;
}
