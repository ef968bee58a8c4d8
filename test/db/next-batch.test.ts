import { expect, test } from 'vitest';
import { nextBatchOf } from '../../db/postgres/write-batcher.js';

/** The write batcher's choice of its next batch (db/postgres/write-batcher.ts). */
type Item = { id: string; interactive?: boolean };
const bg = (n: number): Item => ({ id: `b${n}`, interactive: false });
const person = (n: number): Item => ({ id: `i${n}`, interactive: true });
const ids = (xs: Item[]) => xs.map((x) => x.id);

test('with no interactive item: the oldest max, in order', () => {
  const next = nextBatchOf([bg(1), bg(2), bg(3)], 2, false);
  expect(ids(next.batch)).toEqual(['b1', 'b2']);
  expect(ids(next.rest)).toEqual(['b3']);
  expect(next.jumped).toBe(false);
});

test('an interactive item waiting: the interactive ones alone, oldest first, ahead of older background items', () => {
  const next = nextBatchOf([bg(1), person(1), bg(2), person(2)], 10, false);
  expect(ids(next.batch)).toEqual(['i1', 'i2']);
  expect(ids(next.rest)).toEqual(['b1', 'b2']);
  expect(next.jumped).toBe(true);
});

test('never ahead twice in a row while background items wait: the next batch is taken in order', () => {
  const first = nextBatchOf([bg(1), person(1), bg(2)], 10, false);
  const second = nextBatchOf([...first.rest, person(2)], 10, first.jumped);
  expect(ids(second.batch)).toEqual(['b1', 'b2', 'i2']);
  expect(second.jumped).toBe(false);
  // And after that in-order batch, a person goes ahead again.
  const third = nextBatchOf([bg(3), person(3)], 10, second.jumped);
  expect(ids(third.batch)).toEqual(['i3']);
});

test('interactive items alone in the queue: no jump recorded; more than max: the oldest max', () => {
  const next = nextBatchOf([person(1), person(2), person(3)], 2, false);
  expect(ids(next.batch)).toEqual(['i1', 'i2']);
  expect(ids(next.rest)).toEqual(['i3']);
  expect(next.jumped).toBe(false);
});
