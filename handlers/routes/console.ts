import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { CcaError } from '../../core/diagnostics/index.js';
import type { ServerDeps } from '../deps.js';
import { publicRoute } from '../auth.js';
import { errorResponse } from '../errors.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WEB = join(ROOT, 'web');
const ZOD = join(ROOT, 'node_modules', 'zod');

/**
 * The environment-free TypeScript the console imports (the simulation, the controllers,
 * the MemoryStore, the status views), by top folder. Nothing else of the tree is served.
 */
const SOURCE_ROOTS = ['core/', 'jobs/', 'db/', 'handlers/status.ts', 'handlers/facts.ts', 'agent/core/'];
const SOURCE_DENY = ['db/postgres/', 'db/etcd/', 'jobs/graphile-driver.ts', 'jobs/job-hook.ts'];

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
 * The console: plain files from web/, the shared TypeScript modules it imports transpiled
 * on request (esbuild's `transform`, one file at a time: no bundle, no build step), and zod's
 * own ESM files. Everything is public and static; the data comes from the API, which checks
 * the caller. The page may talk to its own origin only (Content-Security-Policy).
 */
export function consoleRoutes(_deps?: Pick<ServerDeps, 'version'>) {
  const transpiled = new Map<string, { mtimeMs: number; size: number; code: string; etag: string }>();
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
    const html = await readFile(join(WEB, 'index.html'), 'utf8');
    return send(c, html.replace('<!--IMPORT-MAP-->', `<script type="importmap">${IMPORT_MAP}</script>`), TYPES['.html']!);
  };

  const app = new Hono();
  app.onError((err, c) => errorResponse(err, c));
  app.notFound((c) => errorResponse(new CcaError('CCA-E0604', { method: c.req.method, path: c.req.path }), c));
  return app
    .get('/', publicRoute(), page)
    .get('/index.html', publicRoute(), page)
    .get('/web/*', publicRoute(), async (c) => {
      const file = inside(WEB, c.req.path.slice('/web/'.length));
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
      // Source imports say `./keys.js` (NodeNext); the file is keys.ts.
      const rel = c.req.path.slice('/src/'.length).replace(/\.js$/, '.ts');
      if (!rel.endsWith('.ts') || !SOURCE_ROOTS.some((r) => rel.startsWith(r)) || SOURCE_DENY.some((d) => rel.startsWith(d))) return notFound(c);
      const file = inside(ROOT, rel);
      const st = file ? await stat(file).catch(() => undefined) : undefined;
      if (!file || !st?.isFile()) return notFound(c);
      let hit = transpiled.get(file);
      if (!hit || hit.mtimeMs !== st.mtimeMs || hit.size !== st.size) {
        const source = await readFile(file, 'utf8');
        // Loaded on first use: a pod that never serves the console never starts esbuild's service.
        const { transform } = await import('esbuild');
        const out = await transform(source, {
          loader: 'ts',
          format: 'esm',
          target: 'es2022',
          sourcefile: `/src/${rel}`,
          sourcemap: 'inline',
          tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
        });
        hit = { mtimeMs: st.mtimeMs, size: st.size, code: out.code, etag: etagOf(out.code) };
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
