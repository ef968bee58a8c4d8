import { expect, test } from 'vitest';
import { expectFile } from '../core/support/golden.js';
import { cliDoc } from './docs.js';

test('docs/cli.md is generated from the golden runs and the commands\' declarations, and up to date', async () => {
  const doc = await cliDoc();
  expect(doc).not.toMatch(/c-[0-9a-z]+-[0-9a-f]{8}-\d/);
  expectFile('docs/cli.md', doc);
});
