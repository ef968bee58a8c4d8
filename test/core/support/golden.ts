import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

/** Set CCA_UPDATE_GOLDEN=1 to rewrite golden files and generated docs instead of comparing. */
export const UPDATE = process.env.CCA_UPDATE_GOLDEN === '1';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Compare `actual` with the checked-in file at `path` (relative to the repo), or rewrite it. */
export function expectFile(path: string, actual: string): void {
  const abs = resolve(repoRoot, path);
  if (UPDATE) {
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, actual);
    return;
  }
  if (!existsSync(abs)) throw new Error(`${path} is missing; run CCA_UPDATE_GOLDEN=1 npx vitest run test/core to create it`);
  expect(actual, `${path} differs; if the change is intended run CCA_UPDATE_GOLDEN=1 npx vitest run test/core`).toBe(readFileSync(abs, 'utf8'));
}
