#!/usr/bin/env node
// The `cca` launcher; the one place that turns the exit code into process.exit.
// The installed package runs the compiled JavaScript (dist/, made by `npm run build`). A
// development checkout runs the TypeScript sources through tsx's loader, so an edit needs no
// build and a stale dist/ is never run by mistake; CCA_COMPILED=1 runs the checkout's dist/.
import { existsSync } from 'node:fs';

const fromSource = existsSync(new URL('../cli/main.ts', import.meta.url)) && process.env.CCA_COMPILED !== '1';
let main;
if (fromSource) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
} else if (existsSync(new URL('../dist/cli/main.js', import.meta.url))) {
  ({ main } = await import('../dist/cli/main.js'));
} else {
  console.error('cca: no compiled dist/ in this copy of ccattler: run `npm run build` first (docs/deploy.md)');
  process.exit(2);
}
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Watches and timers may still hold the loop; the command is done.
process.exit(code);
