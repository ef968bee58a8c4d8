import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../build/console.js';
import { consoleRoutes } from '../../handlers/routes/console.js';

/**
 * The compiled pod's console (issue #18): `npm run build` writes the console's modules to
 * dist/console/ and a compiled pod serves them from there, byte for byte what a development
 * server transpiles on request, with the same graph (a server-only module stays a 404).
 */
const root = join(import.meta.dirname, '..', '..');
const out = mkdtempSync(join(tmpdir(), 'cca-console-build-'));
let built: string[] = [];
beforeAll(async () => {
  built = await buildConsole(root, out);
}, 120_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('prebuilt console modules', () => {
  const dev = consoleRoutes(undefined, root);
  const prod = () => consoleRoutes(undefined, root, out);

  it('serves every module of the graph as the development server does', async () => {
    expect(built).toContain('jobs/sim/world.ts');
    const app = prod();
    for (const rel of ['core/keys.ts', 'jobs/sim/world.ts', built[0]!]) {
      const path = `/src/${rel.replace(/\.ts$/, '.js')}`;
      const [a, b] = await Promise.all([app.request(path), dev.request(path)]);
      expect(a.status, path).toBe(200);
      expect(await a.text(), path).toBe(await b.text());
    }
  });

  it('serves nothing outside the graph', async () => {
    for (const path of ['/src/db/postgres/store.js', '/src/handlers/app.js', '/src/../package.json', '/src/modules.json']) {
      expect((await prod().request(path)).status, path).toBe(404);
    }
  });

  it('a compiled pod without its prebuilt modules says so: CCA-E0620', async () => {
    const r = await consoleRoutes(undefined, root, join(out, 'missing')).request('/src/core/keys.js');
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(await r.text()).toContain('CCA-E0620');
  });
});
