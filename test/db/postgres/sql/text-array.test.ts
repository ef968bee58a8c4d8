import { createRequire } from 'node:module';
import { afterAll, expect, test } from 'vitest';
import pg from 'pg';
import { booleanArrayLiteral, integerArrayLiteral, textArrayLiteral } from '../../../../db/postgres/sql/text-array.js';
import { Rng } from '../../../../jobs/sim/rng.js';
import { createTestDatabase } from '../../../support/databases.js';

// pg's own parameter encoding: what the literal must equal.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(v: unknown): string };

const tricky = ['', 'plain', 'NULL', 'a"b', 'c\\d', '\\"', '{x,y}', 'a, b', ' spaced ', 'new\nline', 'tab\t', '\u0000'.slice(1), '\u0001', '\u001f', '\u007f', 'é ü ß', '日本', '😀', 'lone \ud800 high', 'lone \udc00 low', '\u2028\u2029', '{"k":"v\\"q","n":[1,2]}'];

function randomStrings(seed: number, n: number): string[] {
  const rng = new Rng(seed);
  const alphabet = ['a', '"', '\\', ',', '{', '}', ' ', '\n', '\u0002', 'é', '😀', '\ud83d', 'N', 'U', 'L'];
  return Array.from({ length: n }, () => Array.from({ length: Math.floor(rng.next() * 12) }, () => alphabet[Math.floor(rng.next() * alphabet.length)]!).join(''));
}

test('the literal is the one pg itself would send, for quotes, backslashes, control characters and surrogates', () => {
  expect(textArrayLiteral(tricky)).toBe(prepareValue(tricky));
  for (let seed = 1; seed <= 50; seed++) {
    const xs = randomStrings(seed, 40);
    expect(textArrayLiteral(xs)).toBe(prepareValue(xs));
  }
  expect(textArrayLiteral([])).toBe(prepareValue([]));
});

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function clientOnNewDatabase(label: string): Promise<pg.Client> {
  const db = await createTestDatabase(label);
  cleanups.push(db.drop);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  cleanups.push(() => client.end());
  return client;
}

test('Postgres reads back exactly the strings (those it can hold: no NUL, surrogates as UTF-8 makes them)', async () => {
  const client = await clientOnNewDatabase('textarray');
  const xs = [...tricky.filter((s) => !/[\ud800-\udfff]/.test(s) || s === '😀'), ...randomStrings(99, 200).filter((s) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s))];
  const r = await client.query<{ a: string[] }>('SELECT $1::text[] AS a', [textArrayLiteral(xs)]);
  expect(r.rows[0]!.a).toEqual(xs);
});

test('integer and boolean literals: Postgres reads back the same arrays; a non-integer is refused, never written', async () => {
  const client = await clientOnNewDatabase('intarray');
  const ints = [0, 1, -1, 2 ** 53 - 1, -(2 ** 53 - 1), 42];
  const bools = [true, false, false, true];
  const r = await client.query<{ b: string[]; i: number[]; f: boolean[]; e: string[] }>('SELECT $1::bigint[]::text[] AS b, $2::int[] AS i, $3::bool[] AS f, $4::bigint[]::text[] AS e', [
    integerArrayLiteral(ints),
    integerArrayLiteral([1, 2, 3]),
    booleanArrayLiteral(bools),
    integerArrayLiteral([]),
  ]);
  expect(r.rows[0]).toEqual({ b: ints.map(String), i: [1, 2, 3], f: bools, e: [] });
  for (const bad of [1.5, Number.NaN, Infinity, 2 ** 53]) expect(() => integerArrayLiteral([1, bad])).toThrow(RangeError);
});
