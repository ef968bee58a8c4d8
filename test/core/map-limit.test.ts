import { expect, test } from 'vitest';
import { mapLimit } from '../../core/map-limit.js';

test('mapLimit answers in order with at most `limit` calls in flight', async () => {
  let inFlight = 0;
  let most = 0;
  const out = await mapLimit([5, 1, 4, 2, 3, 0, 6], 3, async (x) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, x));
    inFlight--;
    return x * 10;
  });
  expect(out).toEqual([50, 10, 40, 20, 30, 0, 60]);
  expect(most).toBe(3);
  expect(await mapLimit([], 3, async (x: number) => x)).toEqual([]);
});
