import { expect, test } from 'vitest';
import { CpuRate } from '../../agent/proc.js';

test('CpuRate: no rate before a second sample; samples closer than 1 s keep the baseline', () => {
  const r = new CpuRate();
  expect(r.rate('a', 10, 0)).toBeUndefined(); // just started: no usage rather than a false 0
  expect(r.rate('a', 10.001, 10)).toBeUndefined(); // 10 ms later: too short to mean anything
  expect(r.rate('a', 10.5, 1_000)).toBe(500); // half a core over the second since the first sample
  expect(r.rate('a', 10.6, 1_100)).toBe(500); // too soon: the previous rate, baseline kept
  expect(r.rate('a', 11.5, 2_000)).toBe(1_000);
  expect(r.millis('b', 3, 0)).toBe(0); // the numeric form for callers that need one
  r.forget('a');
  expect(r.rate('a', 20, 3_000)).toBeUndefined();
});
