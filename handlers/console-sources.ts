import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { CcaError } from '../core/diagnostics/index.js';

/**
 * The one compiler setting the console's per-file transpile and this graph share: with
 * `verbatimModuleSyntax` a type-only import is dropped and every other one is kept, exactly
 * as tsc emits it, so the files the graph finds are the files the browser asks for.
 */
export const CONSOLE_TS = { compilerOptions: { verbatimModuleSyntax: true } } as const;

/** The one bare import the shared code may have; the page's import map resolves it. */
const BROWSER_PACKAGES = new Set(['zod']);

export interface ConsoleSources {
  /**
   * The TypeScript files (repository-relative, `/`-separated) the console's modules reach,
   * each with its mtime when the graph was followed: an edit to one may change the graph.
   */
  files: ReadonlyMap<string, number>;
  /** Imports a browser cannot load (Node builtins, server packages), with who imports them. */
  foreign: { module: string; imported: string }[];
}

/**
 * What the console may serve from the sources: the static import graph of its entry modules
 * (every `web/*.js`), followed through `/src/<path>.js` and the sources' relative imports,
 * dynamic `import('literal')` included. Nothing is listed by hand, so a module the console
 * starts to import (say `agent/core/`) is served with no edit here, and a server-only module
 * it does not reach (`db/postgres/store.ts`, `handlers/app.ts`) is not.
 */
export async function consoleSources(root: string): Promise<ConsoleSources> {
  const web = join(root, 'web');
  const entries = (await readdir(web)).filter((f) => f.endsWith('.js')).map((f) => join(web, f));
  const foreign: ConsoleSources['foreign'] = [];
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: entries,
    bundle: true,
    write: false,
    outdir: 'console-graph', // required with several entries; nothing is written
    metafile: true,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
    absWorkingDir: root,
    tsconfigRaw: CONSOLE_TS,
    plugins: [
      {
        name: 'cca-console-graph',
        setup(b) {
          // The page's own absolute URLs for the sources: `/src/jobs/sim/world.js` is jobs/sim/world.ts.
          b.onResolve({ filter: /^\/src\// }, (a) => ({ path: join(root, a.path.slice('/src/'.length).replace(/\.js$/, '.ts')) }));
          b.onResolve({ filter: /^[^./]/ }, (a) => {
            const pkg = a.path.startsWith('@') ? a.path.split('/').slice(0, 2).join('/') : a.path.split('/')[0]!;
            if (!BROWSER_PACKAGES.has(pkg)) foreign.push({ module: rel(root, a.importer), imported: a.path });
            return { path: a.path, external: true };
          });
        },
      },
    ],
  }).catch((e: unknown) => {
    const first = (e as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors?.[0];
    const reason = first ? `${first.location ? `${first.location.file}:${first.location.line}: ` : ''}${first.text}` : String(e);
    throw new CcaError('CCA-E0781', { reason });
  });
  const files = new Map<string, number>();
  for (const input of Object.keys(result.metafile.inputs)) {
    const file = rel(root, isAbsolute(input) ? input : join(root, input));
    if (file.endsWith('.ts') && !file.startsWith('..')) files.set(file, (await stat(join(root, file))).mtimeMs);
  }
  return { files, foreign };
}

function rel(root: string, file: string): string {
  return relative(root, file).split(sep).join('/');
}

/**
 * One source module as the browser gets it: TypeScript to ES2022 with its types erased, one
 * file at a time (no bundle), an inline source map naming `/src/<rel>`. The request-time path
 * (a development checkout) and `npm run build` (which writes them under dist/console/ for a
 * production pod, so it never loads esbuild) both call this, so they serve the same bytes.
 */
export async function transpileConsoleModule(source: string, rel: string): Promise<string> {
  const { transform } = await import('esbuild');
  const out = await transform(source, {
    loader: 'ts',
    format: 'esm',
    target: 'es2022',
    sourcefile: `/src/${rel}`,
    sourcemap: 'inline',
    tsconfigRaw: CONSOLE_TS,
  });
  return out.code;
}

/** The list of served modules `npm run build` writes beside them (repository-relative `.ts` paths). */
export const PREBUILT_INDEX = 'modules.json';
