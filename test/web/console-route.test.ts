import { describe, expect, it } from 'vitest';
import { consoleRoutes } from '../../handlers/routes/console.js';

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
