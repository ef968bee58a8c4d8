import { expect, test } from 'vitest';
import { expectFile } from '../core/support/golden.js';
import { cliDoc } from './docs.js';

test('docs/cli.md is generated from the golden runs and up to date', () => {
  const doc = cliDoc();
  expect(doc).not.toMatch(/c-[0-9a-z]+-[0-9a-f]{8}-\d/);
  expectFile('docs/cli.md', doc);
});
