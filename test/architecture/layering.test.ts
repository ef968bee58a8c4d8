import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { cycles, importGraph, productionModules, repoRoot, type Import } from './imports.js';
import { LAYERS, lazyAllows, layerNamed, layerOf, renderTable } from './layers.js';

/**
 * Imports that break a rule today and that another change is removing. Each names that
 * change; when it lands, its entry goes (the last test fails while an entry is unused).
 */
const EXCEPTIONS: { from: string; to: string; why: string }[] = [];

const where = (e: Import) => `${e.from}:${e.line} imports ${e.to ?? e.spec}`;

/** Why an import breaks the table, or undefined when the table allows it. */
function violation(e: Import): string | undefined {
  const from = layerOf(e.from)!;
  if (e.to === undefined) {
    if (e.builtin) return from.builtins ? undefined : `${where(e)}: ${from.name} imports no node builtin`;
    const pkg = e.spec.split('/').slice(0, e.spec.startsWith('@') ? 2 : 1).join('/');
    return !from.packages || from.packages.includes(pkg) ? undefined : `${where(e)}: ${from.name} imports ${from.packages.length ? `only ${from.packages.join(', ')}` : 'no package'}`;
  }
  const to = layerOf(e.to);
  if (!to) return `${where(e)}: ${e.to} is in no row of test/architecture/layers.ts`;
  if (to === from || from.imports.includes(to.name)) return undefined;
  const lazily = from.lazy?.some((l) => lazyAllows(l, e.to!));
  if (lazily) return e.dynamic || e.typeOnly ? undefined : `${where(e)}: ${from.name} loads ${e.to} only lazily (\`import()\` or a type-only import)`;
  return `${where(e)}: ${from.name} may not import ${to.name}`;
}

const modules = productionModules();
const graph = importGraph(modules);
const excepted = (e: Import) => EXCEPTIONS.some((x) => x.from === e.from && x.to === e.to);

describe('the production import graph keeps the layering of docs/architecture.md', () => {
  test('the graph is read (a parser that finds nothing would pass everything)', () => {
    expect(modules.length).toBeGreaterThan(200);
    expect(graph.filter((e) => e.to).length).toBeGreaterThan(1000);
    expect(graph.some((e) => e.dynamic)).toBe(true);
    expect(graph.some((e) => e.typeOnly)).toBe(true);
  });

  test('every production module is in a row of the table', () => {
    expect(modules.filter((m) => !layerOf(m))).toEqual([]);
  });

  test('every import of ours names a module that exists', () => {
    expect(graph.filter((e) => e.to && !existsSync(join(repoRoot, e.to))).map(where)).toEqual([]);
  });

  test('every import is one its row allows: nothing reaches down past the table, sideways or up', () => {
    expect(graph.filter((e) => !excepted(e)).flatMap((e) => violation(e) ?? [])).toEqual([]);
  });

  test('no module imports itself back, through any chain (type-only imports count)', () => {
    expect(cycles(graph).map((c) => c.join(' ⇄ '))).toEqual([]);
  });

  test('the rules themselves: names are unique, and each row imports only rows above it, which exist', () => {
    expect(new Set(LAYERS.map((l) => l.name)).size).toBe(LAYERS.length);
    const bad = LAYERS.flatMap((l, i) =>
      [...l.imports, ...(l.lazy ?? [])].flatMap((n) => {
        const target = n.endsWith('.ts') ? layerOf(n) : layerNamed(n);
        if (!target) return [`${l.name} names ${n}, which is no row`];
        return LAYERS.indexOf(target) < i ? [] : [`${l.name} imports ${n}, which is not above it`];
      }),
    );
    expect(bad).toEqual([]);
  });

  test('an environment-free row (no node builtins, a package list) imports only rows without node builtins', () => {
    // What runs in the browser and the simulation stays free of node: all the way down.
    const bad = LAYERS.filter((l) => !l.builtins && l.packages !== undefined).flatMap((l) =>
      l.imports.filter((n) => layerNamed(n)!.builtins).map((n) => `${l.name} imports ${n}, which may import node builtins`),
    );
    expect(bad).toEqual([]);
  });

  test('each exception is still needed (remove it when its change lands)', () => {
    for (const x of EXCEPTIONS) {
      const e = graph.find((g) => g.from === x.from && g.to === x.to);
      expect(e && violation(e), `${x.from} → ${x.to}`).toBeTruthy();
    }
  });
});

describe('the rules catch what the doc says they forbid', () => {
  const edge = (from: string, to: string, how: Partial<Import> = {}): Import => ({ from, to, spec: to, builtin: false, typeOnly: false, dynamic: false, line: 1, ...how });
  const pkg = (from: string, spec: string): Import => ({ from, spec, builtin: spec.startsWith('node:'), typeOnly: false, dynamic: false, line: 1 });
  test.each([
    ['core imports nothing of ours', edge('core/keys.ts', 'db/store.ts')],
    ['core imports no node builtin', pkg('core/keys.ts', 'node:fs')],
    ['core imports zod only', pkg('core/keys.ts', 'pg')],
    ['a controller imports the store interface, not a store', edge('jobs/controllers/node.ts', 'db/memory.ts')],
    ['a controller imports no node builtin', pkg('jobs/controllers/node.ts', 'node:crypto')],
    ['the store kit does not import a backend', edge('db/memory.ts', 'db/postgres/store.ts')],
    ['openStore loads a backend lazily only', edge('db/index.ts', 'db/etcd/store.ts')],
    ['the CLI never imports the handlers', edge('cli/main.ts', 'handlers/auth.ts')],
    ['the CLI never imports the jobs', edge('cli/views.ts', 'jobs/decisions/why.ts')],
    ['the CLI starts the server lazily only', edge('cli/commands/server.ts', 'server/run.ts')],
    ['the agent never imports a store backend', edge('agent/agent.ts', 'db/etcd/store.ts')],
    ['the agent never imports the CLI', edge('agent/agent.ts', 'cli/client.ts')],
    ['the simulation imports agent/core/ only, of the agent', edge('jobs/sim/world.ts', 'agent/plan.ts')],
    ['agent/core/ imports core only', edge('agent/core/plan.ts', 'agent/runtime.ts', { typeOnly: true })],
    ['nothing imports upward: handlers do not import the server', edge('handlers/app.ts', 'server/start.ts')],
    ['jobs do not import the handlers', edge('jobs/graphile-driver.ts', 'handlers/metrics.ts', { typeOnly: true })],
  ])('%s', (_rule, e) => expect(violation(e)).toBeDefined());

  test.each([
    ['the simulation imports agent/core/', edge('jobs/sim/world.ts', 'agent/core/plan.ts')],
    ['cca server loads the server lazily', edge('cli/commands/server.ts', 'server/run.ts', { dynamic: true })],
    ['openStore names a backend\'s types', edge('db/index.ts', 'db/etcd/store.ts', { typeOnly: true })],
  ])('allowed: %s', (_rule, e) => expect(violation(e)).toBeUndefined());

  test('a cycle is found, type-only or not', () => {
    expect(cycles([edge('a.ts', 'b.ts', { typeOnly: true }), edge('b.ts', 'c.ts'), edge('c.ts', 'a.ts'), edge('c.ts', 'd.ts')])).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});

describe('docs/architecture.md shows this table', () => {
  const path = join(repoRoot, 'docs/architecture.md');
  const BEGIN = '<!-- layers: generated from test/architecture/layers.ts by its test (CCA_UPDATE_GOLDEN=1 rewrites it) -->';
  const END = '<!-- /layers -->';

  test('the table between the markers is renderTable()', () => {
    const doc = readFileSync(path, 'utf8');
    const start = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(start >= 0 && end > start, `docs/architecture.md has the markers ${BEGIN} … ${END}`).toBe(true);
    const shown = doc.slice(start + BEGIN.length, end).trim();
    const wanted = renderTable();
    if (process.env.CCA_UPDATE_GOLDEN === '1' && shown !== wanted) {
      writeFileSync(path, `${doc.slice(0, start + BEGIN.length)}\n${wanted}\n${doc.slice(end)}`);
      return;
    }
    expect(shown, 'docs/architecture.md differs; if the table changed on purpose run CCA_UPDATE_GOLDEN=1 npx vitest run test/architecture').toBe(wanted);
  });
});
