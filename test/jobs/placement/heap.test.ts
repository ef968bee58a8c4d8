import { expect, test } from 'vitest';
import { Heap } from '../../../jobs/placement/heap.js';
import { Rng } from '../../../jobs/sim/rng.js';

interface Item {
  key: number;
  id: number;
}

test('pops in order against a sorted reference, through random pushes, pops and clones, with ties', () => {
  const rng = new Rng(24);
  // Ties on `key` are broken by nothing: any tied item may come first, but never a larger key.
  const less = (a: Item, b: Item) => a.key < b.key;
  for (let round = 0; round < 200; round++) {
    let heap = new Heap(less);
    let ref: Item[] = [];
    for (let op = 0; op < 300; op++) {
      const r = rng.next();
      if (r < 0.55) {
        const item = { key: Math.floor(rng.next() * 20), id: op };
        heap.push(item);
        ref.push(item);
      } else if (r < 0.97) {
        const got = heap.pop();
        if (ref.length === 0) {
          expect(got).toBeUndefined();
          continue;
        }
        const min = Math.min(...ref.map((x) => x.key));
        expect(got?.key).toBe(min);
        ref = ref.filter((x) => x !== got);
      } else {
        // A clone is independent: draining it leaves the original as it was.
        const copy = heap.clone();
        const drained: number[] = [];
        for (let x = copy.pop(); x; x = copy.pop()) drained.push(x.key);
        expect(drained).toEqual(ref.map((x) => x.key).sort((a, b) => a - b));
        expect(heap.size).toBe(ref.length);
        if (rng.next() < 0.5) [heap, ref] = [heap.clone(), [...ref]];
      }
      expect(heap.size).toBe(ref.length);
      expect(heap.peek()?.key).toBe(ref.length === 0 ? undefined : Math.min(...ref.map((x) => x.key)));
    }
  }
});

test('a total order comes out exactly sorted', () => {
  const rng = new Rng(7);
  const heap = new Heap<number>((a, b) => a < b);
  const xs = Array.from({ length: 1_000 }, () => Math.floor(rng.next() * 1e6));
  for (const x of xs) heap.push(x);
  const out: number[] = [];
  for (let x = heap.pop(); x !== undefined; x = heap.pop()) out.push(x);
  expect(out).toEqual([...xs].sort((a, b) => a - b));
});
