/**
 * `npm run build`, second step: the console's shared modules transpiled now, so a compiled
 * pod serves them from dist/console/ and never loads esbuild (handlers/routes/console.ts).
 * What is written is exactly the graph a development server would serve (console-sources.ts),
 * each module through the same transpile; a module a browser cannot run fails the build.
 *
 * `tsx build/console.ts [ROOT [OUT]]` (defaults: this checkout, ROOT/dist/console).
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderPlain, toDiagnostic, CcaError } from '../core/diagnostics/index.js';
import { consoleSources, PREBUILT_INDEX, transpileConsoleModule } from '../handlers/console-sources.js';

export async function buildConsole(root: string, out: string): Promise<string[]> {
  const { files, foreign } = await consoleSources(root);
  if (foreign[0]) throw new CcaError('CCA-E0780', foreign[0]);
  // Written beside and swapped in at the end: a pod serving the old build (a test suite's, or
  // a rebuild under a running server) sees it whole until the moment it sees the new one.
  const next = `${out}.next-${process.pid}`;
  await rm(next, { recursive: true, force: true });
  const rels = [...files.keys()].sort();
  for (const rel of rels) {
    const target = join(next, rel.replace(/\.ts$/, '.js'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await transpileConsoleModule(await readFile(join(root, rel), 'utf8'), rel));
  }
  await writeFile(join(next, PREBUILT_INDEX), `${JSON.stringify(rels, null, 1)}\n`);
  await rm(out, { recursive: true, force: true });
  await rename(next, out);
  return rels;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  const out = resolve(process.argv[3] ?? join(root, 'dist', 'console'));
  buildConsole(root, out).then(
    (rels) => console.log(`console: ${rels.length} modules in ${out}`),
    (e: unknown) => {
      console.error(renderPlain(toDiagnostic(e, 'npm run build')));
      process.exitCode = 1;
    },
  );
}
