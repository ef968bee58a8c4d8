/**
 * Record how long each test file took, for LongestFirstSequencer (test/support/sequencer.ts):
 *
 *   npx vitest run --reporter=default --reporter=json --outputFile.json=/tmp/run.json
 *   npx tsx test/support/record-durations.ts /tmp/run.json
 *
 * Files under a second are left out (their order does not matter).
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DURATIONS_FILE } from './sequencer.js';

const reportSchema = z.object({ testResults: z.array(z.object({ name: z.string(), startTime: z.number(), endTime: z.number() })) });

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: npx tsx test/support/record-durations.ts REPORT.json (a vitest JSON report of a full run)\n');
  process.exit(2);
}
const root = fileURLToPath(new URL('../../', import.meta.url));
const report = reportSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
const durations = report.testResults
  .map((r) => [relative(root, r.name.replace(/^.*?\/test\//, `${root}test/`)), Math.round((r.endTime - r.startTime) / 100) / 10] as const)
  .filter(([, s]) => s >= 1)
  .sort((a, b) => b[1] - a[1]);
writeFileSync(DURATIONS_FILE, `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
process.stdout.write(`${durations.length} files recorded in ${fileURLToPath(DURATIONS_FILE)}\n`);
