import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { expect } from 'vitest';
import { repoRoot, UPDATE } from '../core/support/golden.js';
import type { Run } from './harness.js';

/** Stable text: the server's port, generated request IDs and the Node version vary per run. */
export function normalise(s: string): string {
  return s
    .replace(/http:\/\/127\.0\.0\.1:\d+/g, 'http://127.0.0.1:PORT')
    .replace(/\bc-[0-9a-z]+-[0-9a-f]{8}-\d+\b/g, 'c-REQUEST-ID')
    .replace(/node v\d+\.\d+\.\d+, [\w-]+/g, 'node vX, PLATFORM');
}

/** A run as one golden file: the command, its exit code, stdout and stderr. */
export function expectGolden(name: string, argv: string[], r: Run): void {
  const text = normalise([`$ cca ${argv.join(' ')}`, `exit ${r.code}`, '--- stdout', r.stdout.trimEnd(), '--- stderr', r.stderr.trimEnd(), ''].join('\n'));
  const abs = resolve(repoRoot, 'test/cli/golden', `${name}.txt`);
  if (UPDATE) {
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, text);
    return;
  }
  if (!existsSync(abs)) throw new Error(`test/cli/golden/${name}.txt is missing; run CCA_UPDATE_GOLDEN=1 npx vitest run test/cli`);
  expect(text, `test/cli/golden/${name}.txt differs; if intended run CCA_UPDATE_GOLDEN=1 npx vitest run test/cli`).toBe(readFileSync(abs, 'utf8'));
}
