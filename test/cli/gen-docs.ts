/** Writes docs/cli.md from the golden runs: `npx tsx test/cli/gen-docs.ts`. */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot } from '../core/support/golden.js';
import { cliDoc } from './docs.js';

writeFileSync(resolve(repoRoot, 'docs/cli.md'), await cliDoc());
console.log('wrote docs/cli.md');
