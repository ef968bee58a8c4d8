import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isCompiled, packageRoot } from '../core/package-root.js';

/**
 * Node's arguments to run the module `rel` (no extension, relative to the module `from`):
 * the compiled `.js` when `from` runs compiled (`npm run build`, the installed package, which
 * has no tsx), else the TypeScript source through tsx's loader (a development checkout).
 * tsx is resolved only in the second case, so a production install never needs it.
 *
 * `CCA_COMPILED=1` in a checkout runs the module's counterpart in the checkout's `dist/`
 * instead, as `bin/cca.mjs` does: a process started from the sources then runs what the
 * package runs, without tsx's start-up (the test suite builds `dist/` and sets it, since
 * its spawned servers, agents and supervisors were most of its CPU).
 */
export function nodeEntry(from: string, rel: string): string[] {
  if (isCompiled(from)) return [fileURLToPath(new URL(`${rel}.js`, from))];
  const source = fileURLToPath(new URL(`${rel}.ts`, from));
  if (process.env.CCA_COMPILED === '1') return [compiledCounterpart(source)];
  const tsx = pathToFileURL(createRequire(from).resolve('tsx')).href;
  return ['--import', tsx, source];
}

/** This checkout's root: agent/node-entry.ts sits one folder below it. */
const checkout = fileURLToPath(packageRoot(import.meta.url, 1));

/** `<checkout>/agent/supervisor.ts` → `<checkout>/dist/agent/supervisor.js` (tsconfig.build.json's layout). */
export function compiledCounterpart(source: string): string {
  const rel = path.relative(checkout, source);
  return path.join(checkout, 'dist', rel.replace(/\.ts$/, '.js'));
}
