import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const run = promisify(execFile);

test('the drizzle schema and the committed migrations agree (nothing left to generate)', async () => {
  // drizzle-kit joins --out onto './', so the copy must live under the project.
  await mkdir('.tmp', { recursive: true });
  const out = path.relative(process.cwd(), await mkdtemp(path.join('.tmp', 'migrations-')));
  try {
    await cp('db/postgres/migrations', out, { recursive: true });
    const before = (await readdir(out)).sort();
    const gen = await run(
      'npx',
      ['drizzle-kit', 'generate', '--dialect', 'postgresql', '--schema', 'db/postgres/schema.ts', '--out', out],
      { timeout: 60_000 },
    );
    expect(gen.stdout + gen.stderr).toContain('No schema changes');
    expect((await readdir(out)).sort()).toEqual(before);
    const check = await run('npx', ['drizzle-kit', 'check', '--dialect', 'postgresql', '--out', out], { timeout: 60_000 });
    expect(check.stdout + check.stderr).toMatch(/Everything's fine/);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
