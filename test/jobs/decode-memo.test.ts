import { expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { DecodeMemo } from '../../jobs/decode-memo.js';

const record = (id: string, reason = '') => encodeFact('replica', { id, service: 'web', specRevision: 1, template: 't', desired: 'run', createdAt: 1, retired: false, reason, origin: { by: 'scale' } });

test("the memo answers exactly decodeFact's value, once per value, frozen", () => {
  const memo = new DecodeMemo();
  const key = buildKey('replica', 'web', 'web-a');
  const v1 = record('web-a');
  const a = memo.decode('replica', key, v1);
  expect(a).toEqual(decodeFact('replica', key, v1));
  // The same value (another string with the same text, as a new read returns) is the same object.
  expect(memo.decode('replica', key, `${v1}`.slice(0))).toBe(a);
  expect(Object.isFrozen(a)).toBe(true);
  expect(Object.isFrozen(a.origin)).toBe(true);
  expect(() => {
    (a as { reason: string }).reason = 'changed';
  }).toThrow(TypeError);
  // A changed value is decoded again; the old one is gone.
  const b = memo.decode('replica', key, record('web-a', 'r'));
  expect(b.reason).toBe('r');
  expect(memo.size().entries).toBe(1);
});

test('a value the schema refuses is refused every time, never remembered', () => {
  const memo = new DecodeMemo();
  const key = buildKey('replica', 'web', 'web-b');
  expect(() => memo.decode('replica', key, '{"id":3}')).toThrow();
  expect(() => memo.decode('replica', key, '{"id":3}')).toThrow();
  expect(memo.size().entries).toBe(0);
});

test('it holds at most its bytes, the least recently used going first', () => {
  const one = buildKey('replica', 'web', 'web-00').length + record('web-00').length;
  const memo = new DecodeMemo(one * 10);
  const id = (i: number) => `web-${String(i).padStart(2, '0')}`;
  const read = (i: number) => memo.decode('replica', buildKey('replica', 'web', id(i)), record(id(i)));
  const first = read(0);
  const early = read(1);
  for (let i = 2; i < 25; i++) {
    read(i);
    expect(read(0)).toBe(first); // read every time: never the one to go
  }
  expect(memo.size().entries).toBe(10);
  expect(memo.size().bytes).toBeLessThanOrEqual(one * 10);
  expect(read(0)).toBe(first);
  const again = read(1); // not read since early on: it went, and is decoded again
  expect(again).toEqual(early);
  expect(again).not.toBe(early);
});

test('decisions and events are decoded every time, never held (only retention and why read them whole)', () => {
  const memo = new DecodeMemo();
  const key = buildKey('event', 'n1', 'e1');
  const value = encodeFact('event', { node: 'n1', kind: 'started', message: 'started', at: 1 });
  expect(memo.decode('event', key, value)).toEqual(decodeFact('event', key, value));
  expect(memo.size().entries).toBe(0);
});

test("a frozen key-value (the read mirror's) is answered by the object itself, however the value memo moved; another is not", () => {
  const one = buildKey('replica', 'web', 'web-00').length + record('web-00').length;
  const memo = new DecodeMemo(one * 2);
  const key = buildKey('replica', 'web', 'web-00');
  const kv = Object.freeze({ key, value: record('web-00'), createRevision: 1, modRevision: 1, version: 1, lease: 0 });
  const a = memo.decodeKv('replica', kv);
  expect(a).toEqual(decodeFact('replica', key, kv.value));
  // The value memo forgets it (its bound: two records), the object still answers.
  for (let i = 1; i <= 3; i++) memo.decode('replica', buildKey('replica', 'web', `web-0${i}`), record(`web-0${i}`));
  expect(memo.decode('replica', key, kv.value)).not.toBe(a);
  expect(memo.decodeKv('replica', kv)).toBe(a);
  // An object a caller may still change is judged by its value every time.
  const open = { ...kv };
  memo.decodeKv('replica', open);
  open.value = record('web-00', 'changed');
  expect(memo.decodeKv('replica', open).reason).toBe('changed');
});
