import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, test } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { repoRoot } from './support/golden.js';

const workflow = z.object({
  jobs: z.record(
    z.string(),
    z.object({
      services: z.object({ postgres: z.object({ image: z.string() }) }),
      env: z.object({ DATABASE_URL: z.string() }),
      steps: z.array(z.object({ run: z.string().optional(), uses: z.string().optional() })),
    }),
  ),
});

test('docs/ci.md: the workflow parses, runs on a Postgres service through DATABASE_URL, and its npm scripts exist', () => {
  const doc = readFileSync(resolve(repoRoot, 'docs/ci.md'), 'utf8');
  const block = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
  expect(block).toBeDefined();
  const job = Object.values(workflow.parse(parse(block!)).jobs)[0]!;
  expect(new URL(job.env.DATABASE_URL).hostname).toBe('postgres');
  expect(job.services.postgres.image).toMatch(/^postgres:/);
  const scripts = (JSON.parse(readFileSync(resolve(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const runs = job.steps.flatMap((s) => (s.run ? [s.run] : []));
  expect(runs).toEqual(expect.arrayContaining(['npm ci', 'npm test', 'npm run demo:c0']));
  for (const r of runs.filter((x) => x.startsWith('npm run '))) expect(scripts, r).toHaveProperty(r.slice('npm run '.length));
});
