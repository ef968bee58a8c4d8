import { afterAll, expect, test } from 'vitest';
import pg from 'pg';
import { binaryTextArray, booleanArrayLiteral, integerArrayLiteral } from '../../../../db/postgres/sql/text-array.js';
import { Rng } from '../../../../jobs/sim/rng.js';
import { createTestDatabase } from '../../../support/databases.js';

const tricky = ['', 'plain', 'NULL', 'a"b', 'c\\d', '\\"', '{x,y}', 'a, b', ' spaced ', 'new\nline', 'tab\t', '\u0000'.slice(1), '\u0001', '\u001f', '\u007f', 'é ü ß', '日本', '😀', 'lone \ud800 high', 'lone \udc00 low', '\u2028\u2029', '{"k":"v\\"q","n":[1,2]}'];

function randomStrings(seed: number, n: number): string[] {
  const rng = new Rng(seed);
  const alphabet = ['a', '"', '\\', ',', '{', '}', ' ', '\n', '\u0002', 'é', '😀', '\ud83d', 'N', 'U', 'L'];
  return Array.from({ length: n }, () => Array.from({ length: Math.floor(rng.next() * 12) }, () => alphabet[Math.floor(rng.next() * alphabet.length)]!).join(''));
}

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

test('Postgres reads back exactly the strings it can hold, and what pg itself would send for the rest (lone surrogates)', async () => {
  const client = await clientOnNewDatabase('textarray');
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
  const xs = [...tricky, ...randomStrings(99, 200), 'x'.repeat(70_000)];
  const binary = await client.query<{ a: string[] }>('SELECT $1::text[] AS a', [binaryTextArray(xs)]);
  // pg's own encoding of a JS array (a quoted literal) is the reference.
  const own = await client.query<{ a: string[] }>('SELECT $1::text[] AS a', [xs]);
  expect(binary.rows[0]!.a).toEqual(own.rows[0]!.a);
  const holdable = xs.filter((s) => !lone.test(s));
  expect(holdable.length).toBeGreaterThan(100);
  expect(binary.rows[0]!.a.filter((_, i) => !lone.test(xs[i]!))).toEqual(holdable);
  // Postgres's array functions see the elements one by one, as a statement's unnest does.
  const r = await client.query<{ n: number; k: string }>('SELECT cardinality($1::text[]) AS n, ($1::text[])[2] AS k', [binaryTextArray(['a', 'b"c\\d', ''])]);
  expect(r.rows[0]).toEqual({ n: 3, k: 'b"c\\d' });
  expect((await client.query<{ a: string[] }>('SELECT $1::text[] AS a', [binaryTextArray([])])).rows[0]!.a).toEqual([]);
});

test('a NUL, which Postgres text cannot hold, is refused as pg\'s own encoding is', async () => {
  const client = await clientOnNewDatabase('textarray-nul');
  await expect(client.query('SELECT $1::text[] AS a', [['a\u0000b']])).rejects.toThrow(/0x00/);
  await expect(client.query('SELECT $1::text[] AS a', [binaryTextArray(['a\u0000b'])])).rejects.toThrow(/0x00/);
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
