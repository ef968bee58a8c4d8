import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { consoleSources } from '../../handlers/console-sources.js';
import { consoleRoutes } from '../../handlers/routes/console.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const app = consoleRoutes();
const get = (path: string, headers: Record<string, string> = {}) => app.request(path, { headers });

describe('console route (no browser)', () => {
  it('serves the page with the import map and a same-origin-only CSP', async () => {
    const r = await get('/');
    expect(r.status).toBe(200);
    const html = await r.text();
    expect(html).toContain('<script type="importmap">{"imports":{"zod":"/vendor/zod/index.js"}}</script>');
    const csp = r.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
  });

  it('transpiles the shared TypeScript, served under its .js name, with an ETag', async () => {
    const r = await get('/src/jobs/sim/world.js');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/javascript');
    const js = await r.text();
    expect(js).toContain('class SimWorld');
    expect(js).not.toMatch(/^import type/m);
    expect(js).toContain("from '../../db/memory.js'".replace(/'/g, '"'));
    const again = await get('/src/jobs/sim/world.js', { 'if-none-match': r.headers.get('etag')! });
    expect(again.status).toBe(304);
  });

  it('serves the agent core the simulation imports (the quorum decision), browser-safe', async () => {
    const r = await get('/src/agent/core/quorum.js');
    expect(r.status).toBe(200);
    const js = await r.text();
    expect(js).toContain('class OutageLatch');
    expect(js).not.toMatch(/from ["']node:/);
    expect((await get('/src/agent/peer/keys.js')).status).toBe(404);
  });

  it('serves plain console files and zod, nothing else of the tree', async () => {
    expect((await get('/web/app.js')).status).toBe(200);
    expect((await get('/vendor/zod/index.js')).status).toBe(200);
    for (const path of [
      '/src/db/postgres/store.js',
      '/src/server/start.js',
      '/src/handlers/auth.js',
      '/src/../package.json',
      '/web/../package.json',
      '/web/%2e%2e/package.json',
      '/vendor/zod/package.json',
      '/web/nothing.js',
    ]) {
      const r = await get(path);
      expect(r.status, path).toBe(404);
      expect((await r.json()).error.code).toBe('CCA-E0604');
    }
  });
});

describe('what the console serves from the sources: the import graph of web/', () => {
  it('serves every module the simulation and the views import, and refuses server-only ones', async () => {
    const { files, foreign } = await consoleSources(ROOT);
    expect(foreign).toEqual([]); // nothing the page imports needs Node
    for (const f of ['jobs/sim/world.ts', 'jobs/views/status.ts', 'jobs/facts.ts', 'jobs/controllers/index.ts', 'db/memory.ts', 'core/keys.ts', 'core/lang/index.ts']) {
      expect(files.has(f), f).toBe(true);
    }
    for (const f of files.keys()) expect((await get(`/src/${f.replace(/\.ts$/, '.js')}`)).status, f).toBe(200);
    for (const f of ['db/postgres/store', 'db/etcd/store', 'db/sqlite/store', 'handlers/app', 'handlers/routes/console', 'jobs/graphile-driver', 'jobs/job-hook', 'server/start', 'agent/agent', 'cli/main']) {
      const r = await get(`/src/${f}.js`);
      expect(r.status, f).toBe(404);
      expect((await r.json()).error.code).toBe('CCA-E0604');
    }
  });

  it('follows /src URLs, relative, re-exported and dynamic imports, but not type-only ones', async () => {
    const root = fixture({
      'web/app.js': "import { one } from '/src/lib/one.js';\nexport const later = () => import('./late.js');",
      'web/late.js': "import '/src/fresh/new.js';",
      'lib/one.ts': "import type { T } from './types.js';\nexport * from './two.js';\nexport const one: T = 1;",
      'lib/two.ts': 'export const two = 2;',
      'lib/types.ts': 'export type T = number;',
      'lib/unused.ts': 'export const no = 0;',
      'fresh/new.ts': 'export const fresh = true;',
    });
    const { files, foreign } = await consoleSources(root);
    expect([...files.keys()].sort()).toEqual(['fresh/new.ts', 'lib/one.ts', 'lib/two.ts']);
    expect(foreign).toEqual([]);
    const routes = consoleRoutes(undefined, root);
    expect((await routes.request('/src/fresh/new.js')).status).toBe(200);
    expect((await routes.request('/src/lib/unused.js')).status).toBe(404);
    expect((await routes.request('/src/lib/types.js')).status).toBe(404);
  });

  it('refuses to serve any source once one the page reaches imports Node (CCA-E0780)', async () => {
    const root = fixture({
      'web/app.js': "import '/src/lib/one.js';",
      'lib/one.ts': "import { readFileSync } from 'node:fs';\nimport { z } from 'zod';\nexport const one = () => [readFileSync, z];",
    });
    expect((await consoleSources(root)).foreign).toEqual([{ module: 'lib/one.ts', imported: 'node:fs' }]);
    const r = await consoleRoutes(undefined, root).request('/src/lib/one.js');
    expect(r.status).toBe(500);
    expect((await r.json()).error.code).toBe('CCA-E0780');
  });
});

/** A throwaway tree of files (path → text), removed after the test. */
function fixture(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cca-console-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  return root;
}
