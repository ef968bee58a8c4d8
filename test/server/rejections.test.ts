import { expect, test } from 'vitest';
import type { Diagnostic } from '../../core/diagnostics/index.js';
import { isJobReleaseFailure } from '../../jobs/graphile-driver.js';
import { rejectionPolicy } from '../../server/rejections.js';

/** An error as graphile-worker 0.17.3 rejects it when a job's release meets a refused connection. */
function releaseFailure(build: 'src' | 'dist', op: 'batchFailJobs' | 'batchCompleteJobs'): Error {
  const e = new Error('connect ECONNREFUSED 127.0.0.1:5432');
  const file = build === 'src' ? `src/sql/${op === 'batchFailJobs' ? 'failJobs' : 'completeJobs'}.ts` : `dist/sql/${op === 'batchFailJobs' ? 'failJobs' : 'completeJobs'}.js`;
  e.stack = [
    'Error: connect ECONNREFUSED 127.0.0.1:5432',
    '    at /app/node_modules/pg-pool/index.js:45:11',
    '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    `    at async withPgClientFromPool (/app/node_modules/graphile-worker/${build}/helpers.${build === 'src' ? 'ts' : 'js'}:277:20)`,
    `    at async enhancedWithPgClient.withRetries (/app/node_modules/graphile-worker/${build}/lib.${build === 'src' ? 'ts' : 'js'}:568:16)`,
    `    at async ${op} (/app/node_modules/graphile-worker/${file}:69:5)`,
  ].join('\n');
  return e;
}

test("graphile-worker's failed job release is recognised by its own frames, in its sources and its build", () => {
  for (const build of ['src', 'dist'] as const) {
    for (const op of ['batchFailJobs', 'batchCompleteJobs'] as const) expect(isJobReleaseFailure(releaseFailure(build, op)), `${build} ${op}`).toBe(true);
  }
  // The same refused connection anywhere else, a function of ours with a look-alike name, and non-errors are not it.
  const elsewhere = new Error('connect ECONNREFUSED 127.0.0.1:5432');
  elsewhere.stack = 'Error: connect ECONNREFUSED\n    at async withRetries (/app/node_modules/graphile-worker/dist/lib.js:1:1)\n    at async getJob (/app/node_modules/graphile-worker/dist/main.js:1:1)';
  const ours = new Error('x');
  ours.stack = 'Error: x\n    at async batchFailJobs (/app/jobs/mine.js:1:1)';
  for (const r of [elsewhere, ours, 'batchFailJobs graphile-worker', undefined, { stack: releaseFailure('dist', 'batchFailJobs').stack }]) expect(isJobReleaseFailure(r)).toBe(false);
});

test('a rejection the pod absorbs is not fatal; any other is a coded bug with its stack kept for the log, never a crash with a trace', () => {
  const fatal: [Diagnostic, string | undefined][] = [];
  const offered: unknown[] = [];
  const policy = rejectionPolicy(
    (r) => (offered.push(r), isJobReleaseFailure(r)),
    (d, stack) => fatal.push([d, stack]),
  );
  policy(releaseFailure('dist', 'batchCompleteJobs'));
  expect(fatal).toEqual([]);
  const bug = new TypeError('cannot read properties of undefined');
  policy(bug);
  policy('a string');
  expect(offered).toHaveLength(3);
  expect(fatal.map(([d]) => [d.code, d.blame])).toEqual([
    ['CCA-E0001', 'bug'],
    ['CCA-E0001', 'bug'],
  ]);
  expect(fatal[0]![0].message).toContain('TypeError: cannot read properties of undefined');
  expect(fatal[0]![1]).toBe(bug.stack);
  expect(fatal[1]![1]).toBeUndefined();
});
