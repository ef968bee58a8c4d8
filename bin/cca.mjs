#!/usr/bin/env node
// The `cca` launcher: no build step. tsx's ESM loader compiles the TypeScript on the fly;
// this file is the one place that turns the exit code into process.exit.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Watches and timers may still hold the loop; the command is done.
process.exit(code);
