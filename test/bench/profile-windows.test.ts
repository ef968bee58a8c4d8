import { expect, test } from 'vitest';
import { busyByWindow, samplesOf, selfTime, type CpuProfile } from '../../bench/profile-windows.js';

/** Four seconds: the first two busy in `plan`, then idle, then `write` for one second. */
const profile: CpuProfile = {
  nodes: [
    { id: 0, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: [1, 4] },
    { id: 1, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
    { id: 4, callFrame: { functionName: 'step', url: 'file:///x/main/jobs/controllers/endpoints.ts', lineNumber: 1 }, children: [2, 3] },
    { id: 2, callFrame: { functionName: 'plan', url: 'file:///x/main/jobs/plan.ts', lineNumber: 9 } },
    { id: 3, callFrame: { functionName: 'write', url: 'file:///x/main/node_modules/pg/lib/c.js', lineNumber: 0 } },
  ],
  startTime: 0,
  // One sample every 500 ms: plan ×4 (0–2 s), idle ×2 (2–3 s), write ×2 (3–4 s), and a last one.
  samples: [2, 2, 2, 2, 1, 1, 3, 3, 1],
  timeDeltas: [0, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000],
};

test('busy time per window leaves out idle; self time per range names the function and file', () => {
  const s = samplesOf(profile);
  expect(busyByWindow(s, 1)).toEqual([
    { fromS: 0, busyMsPerS: 1000 },
    { fromS: 1, busyMsPerS: 1000 },
    { fromS: 2, busyMsPerS: 0 },
    { fromS: 3, busyMsPerS: 1000 },
  ]);
  expect(Object.fromEntries(selfTime(s, 0, 2))).toEqual({ 'plan jobs/plan.ts:10': 1000 });
  expect(Object.fromEntries(selfTime(s, 2, 4))).toEqual({ 'write node_modules/pg/lib/c.js:1': 500 });
  // Grouped: everything under the controller's frame counts for it.
  expect(Object.fromEntries(selfTime(s, 0, 4, 'group'))).toEqual({ endpoints: 750 });
});

test('--outer groups by the outermost matching frame, the default by the innermost', () => {
  const ours = /\/main\/(\w+\/[\w/-]+)\.ts$/;
  expect(Object.fromEntries(selfTime(samplesOf(profile, ours), 0, 2, 'group'))).toEqual({ 'jobs/plan': 1000 });
  expect(Object.fromEntries(selfTime(samplesOf(profile, ours, true), 0, 2, 'group'))).toEqual({ 'jobs/controllers/endpoints': 1000 });
});
