import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { recordedDurations } from './sequencer.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('the recorded durations name test files that exist, the long ones among them', () => {
  const durations = recordedDurations();
  const files = Object.keys(durations);
  expect(files.length).toBeGreaterThan(20);
  // A renamed or removed file would silently lose its place at the front.
  expect(files.filter((f) => !existsSync(`${root}${f}`))).toEqual([]);
  expect(Math.max(...Object.values(durations))).toBeGreaterThan(60);
});
