import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isCompiled } from '../core/package-root.js';

/**
 * Node's arguments to run the module `rel` (no extension, relative to the module `from`):
 * the compiled `.js` when `from` runs compiled (`npm run build`, the installed package, which
 * has no tsx), else the TypeScript source through tsx's loader (a development checkout).
 * tsx is resolved only in the second case, so a production install never needs it.
 */
export function nodeEntry(from: string, rel: string): string[] {
  if (isCompiled(from)) return [fileURLToPath(new URL(`${rel}.js`, from))];
  const tsx = pathToFileURL(createRequire(from).resolve('tsx')).href;
  return ['--import', tsx, fileURLToPath(new URL(`${rel}.ts`, from))];
}
