/**
 * A Postgres text[] literal, the same pg's own array parameter would send (`{"a","b\"c"}`),
 * built faster: pg escapes each element with two regex replaces, and a batch of placements
 * sends thousands of JSON values (bench:scheduler: ~8 % of a commit's CPU, and garbage).
 * Inside a quoted array element Postgres takes `\"` and `\\` as `"` and `\`, which is what
 * JSON.stringify writes for them; it would also write `\n`, `\u0001` or a lone surrogate's
 * `\udXXX` for other characters, which mean something else to Postgres, so values with
 * control characters or surrogates take pg's way.
 */
export function textArrayLiteral(values: readonly string[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (i > 0) out += ',';
    out += NOT_JSON_SAFE.test(v) ? `"${v.replace(/[\\"]/g, '\\$&')}"` : JSON.stringify(v);
  }
  return `${out}}`;
}

/** Characters JSON.stringify escapes otherwise than a Postgres array element needs. */
const NOT_JSON_SAFE = /[\u0000-\u001f\ud800-\udfff]/;

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
