import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, normalize, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { CcaError, messageOf } from '../../core/diagnostics/index.js';
import type { ServerDeps } from '../deps.js';
import { publicRoute } from '../auth.js';
import { errorResponse } from '../errors.js';
import { isCompiled, packageRoot } from '../../core/package-root.js';
import { consoleSources, PREBUILT_INDEX, transpileConsoleModule, type ConsoleSources } from '../console-sources.js';

const ROOT = resolve(fileURLToPath(packageRoot(import.meta.url, 2)));
/** zod's folder wherever the install put it (in an installed package it sits beside ours, not inside). */
const ZOD = dirname(createRequire(import.meta.url).resolve('zod/package.json'));
/** Compiled (`npm run build`): the console's modules were transpiled at build time into dist/console/. */
const PREBUILT = isCompiled(import.meta.url) ? join(ROOT, 'dist', 'console') : undefined;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** `zod` is the only bare import the shared code has; the browser resolves it through this map. */
export const IMPORT_MAP = JSON.stringify({ imports: { zod: '/vendor/zod/index.js' } });

/**
 * The console: plain files from web/, the shared TypeScript modules it imports, and zod's own
 * ESM files. In a development checkout the modules are transpiled on request (esbuild's
 * `transform`, one file at a time, so an edit shows on reload); compiled (`npm run build`, the
 * installed package) they are read from `prebuilt`, written at build time, and esbuild is
 * never loaded. Everything is public and static; the data comes from the API, which checks
 * the caller. The page may talk to its own origin only (Content-Security-Policy). `root` is
 * the repository (tests pass a fixture tree).
 */
export function consoleRoutes(_deps?: Pick<ServerDeps, 'version'>, root = ROOT, prebuilt = PREBUILT) {
  const web = join(root, 'web');
  const transpiled = new Map<string, { mtimeMs: number; size: number; code: string; etag: string }>();
  // What /src may serve: the import graph of web/, followed on the first request (a pod that
  // never serves the console never starts esbuild), and again once a file in it has changed
  // since (an edit may add an import). See console-sources.ts.
  let sources: Promise<ConsoleSources> | undefined;
  const serveSet = async (rel: string, mtimeMs: number): Promise<ConsoleSources> => {
    const seen = sources && (await sources.catch(() => undefined))?.files.get(rel);
    if (!sources || (seen !== undefined && seen !== mtimeMs)) {
      const next = consoleSources(root);
      sources = next;
      next.catch(() => sources === next && (sources = undefined)); // retried by the next request
    }
    return sources;
  };
  const mapHash = createHash('sha256').update(IMPORT_MAP).digest('base64');
  const csp = [
    "default-src 'self'",
    `script-src 'self' 'sha256-${mapHash}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "style-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');

  const send = (c: Context, body: string | Uint8Array, type: string, etag?: string) => {
    if (etag && c.req.header('if-none-match') === etag) return c.body(null, 304);
    c.header('Content-Type', type);
    c.header('Cache-Control', 'no-cache');
    c.header('X-Content-Type-Options', 'nosniff');
    if (etag) c.header('ETag', etag);
    if (type.startsWith('text/html')) c.header('Content-Security-Policy', csp);
    return c.body(body as never);
  };

  const notFound = (c: Context): never => {
    throw new CcaError('CCA-E0604', { method: c.req.method, path: c.req.path });
  };

  const page = async (c: Context) => {
    const html = await readFile(join(web, 'index.html'), 'utf8');
    return send(c, html.replace('<!--IMPORT-MAP-->', `<script type="importmap">${IMPORT_MAP}</script>`), TYPES['.html']!);
  };

  // Prebuilt: the build's list of modules is what /src may serve; each is read once.
  let served: Promise<Set<string>> | undefined;
  const prebuiltCode = new Map<string, { code: string; etag: string }>();
  const servePrebuilt = async (c: Context) => {
    const dir = prebuilt!;
    served ??= readFile(join(dir, PREBUILT_INDEX), 'utf8').then(
      (t) => new Set(JSON.parse(t) as string[]),
      (e: unknown) => {
        served = undefined; // retried by the next request
        throw new CcaError('CCA-E0620', { dir, reason: messageOf(e) }, { cause: e });
      },
    );
    const rel = c.req.path.slice('/src/'.length).replace(/\.js$/, '.ts');
    if (!(await served).has(rel)) return notFound(c);
    let hit = prebuiltCode.get(rel);
    if (!hit) {
      const code = await readFile(join(dir, rel.replace(/\.ts$/, '.js')), 'utf8');
      hit = { code, etag: etagOf(code) };
      prebuiltCode.set(rel, hit);
    }
    return send(c, hit.code, TYPES['.js']!, hit.etag);
  };

  const app = new Hono();
  app.onError((err, c) => errorResponse(err, c));
  app.notFound((c) => errorResponse(new CcaError('CCA-E0604', { method: c.req.method, path: c.req.path }), c));
  return app
    .get('/', publicRoute(), page)
    .get('/index.html', publicRoute(), page)
    .get('/web/*', publicRoute(), async (c) => {
      const file = inside(web, c.req.path.slice('/web/'.length));
      const type = file && TYPES[extname(file)];
      if (!file || !type) return notFound(c);
      const body = await readFile(file).catch(() => undefined);
      return body ? send(c, body, type, etagOf(body)) : notFound(c);
    })
    .get('/vendor/zod/*', publicRoute(), async (c) => {
      const file = inside(ZOD, c.req.path.slice('/vendor/zod/'.length));
      if (!file || extname(file) !== '.js') return notFound(c);
      const body = await readFile(file).catch(() => undefined);
      return body ? send(c, body, TYPES['.js']!, etagOf(body)) : notFound(c);
    })
    .get('/src/*', publicRoute(), async (c) => {
      if (prebuilt) return servePrebuilt(c);
      // Source imports say `./keys.js` (NodeNext); the file is keys.ts.
      const asked = c.req.path.slice('/src/'.length).replace(/\.js$/, '.ts');
      const file = asked.endsWith('.ts') ? inside(root, asked) : undefined;
      const st = file ? await stat(file).catch(() => undefined) : undefined;
      if (!file || !st?.isFile()) return notFound(c);
      const rel = relative(root, file).split(sep).join('/');
      const { files, foreign } = await serveSet(rel, st.mtimeMs);
      // A module a browser cannot run would break the page in a way no test of the page sees first.
      if (foreign[0]) throw new CcaError('CCA-E0780', foreign[0]);
      if (!files.has(rel)) return notFound(c);
      let hit = transpiled.get(file);
      if (!hit || hit.mtimeMs !== st.mtimeMs || hit.size !== st.size) {
        const source = await readFile(file, 'utf8');
        // esbuild is loaded on first use: a pod that never serves the console never starts its service.
        const code = await transpileConsoleModule(source, rel);
        hit = { mtimeMs: st.mtimeMs, size: st.size, code, etag: etagOf(code) };
        transpiled.set(file, hit);
      }
      return send(c, hit.code, TYPES['.js']!, hit.etag);
    });
}

/** `rel` resolved under `base`, or undefined when it would leave it. */
function inside(base: string, rel: string): string | undefined {
  if (rel.includes('\0') || rel.includes('%')) return undefined;
  const file = normalize(join(base, rel));
  return file.startsWith(base + sep) ? file : undefined;
}

function etagOf(body: string | Uint8Array): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}
