/**
 * The import graph of the production tree, read with the TypeScript compiler's parser (no
 * type-checking, so it is quick): every static import and re-export, every `import('…')`,
 * with whether it is type-only. test/architecture/layering.test.ts checks it against
 * test/architecture/layers.ts; `npx tsx test/architecture/imports.ts` prints its cycles.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The folders that ship: what a server pod, an agent, the CLI and the console run. */
export const PRODUCTION_ROOTS = ['core', 'db', 'jobs', 'handlers', 'server', 'agent', 'cli', 'bin', 'web'];

export interface Import {
  /** The importing module, repo-relative (`db/memory.ts`). */
  from: string;
  /** One of ours, repo-relative; undefined for a package or a node builtin. */
  to?: string;
  /** The specifier as written. */
  spec: string;
  /** `node:fs`, `fs`, …: a node builtin. */
  builtin: boolean;
  /** `import type`, `export type`, or every named binding marked `type`: erased at run time. */
  typeOnly: boolean;
  /** `import('…')`: loaded when called. */
  dynamic: boolean;
  line: number;
}

function walk(dir: string): string[] {
  return readdirSync(join(repoRoot, dir)).flatMap((f) => {
    const p = posix.join(dir, f);
    if (statSync(join(repoRoot, p)).isDirectory()) return f === 'node_modules' ? [] : walk(p);
    return /\.(ts|js|mjs)$/.test(f) && !f.endsWith('.d.ts') ? [p] : [];
  });
}

export function productionModules(): string[] {
  return PRODUCTION_ROOTS.flatMap(walk).sort();
}

const BUILTINS = new Set(builtinModules);

function target(from: string, spec: string): string | undefined {
  // The console's modules import the shared TypeScript as /src/<path>.js (handlers/routes/console.ts).
  const rel = spec.startsWith('/src/') ? spec.slice('/src/'.length) : spec.startsWith('.') ? posix.join(posix.dirname(from), spec) : undefined;
  if (rel === undefined) return undefined;
  if (rel.startsWith('web/') || from.startsWith('web/') && !spec.startsWith('/src/')) return rel;
  // bin/cca.mjs imports the compiled twin of a module (dist/cli/main.js is cli/main.ts, `npm run build`).
  if (rel.startsWith('dist/')) return rel.slice('dist/'.length).replace(/\.js$/, '.ts');
  return rel.replace(/\.js$/, '.ts');
}

function typeOnlyClause(clause: ts.ImportClause | undefined): boolean {
  if (!clause) return false; // `import './x.js'`: run for its effects
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const b = clause.namedBindings;
  return !!b && ts.isNamedImports(b) && b.elements.length > 0 && b.elements.every((e) => e.isTypeOnly);
}

export function importsOf(file: string, text = readFileSync(join(repoRoot, file), 'utf8')): Import[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const out: Import[] = [];
  const add = (spec: string, node: ts.Node, typeOnly: boolean, dynamic: boolean) => {
    const bare = spec.replace(/^node:/, '');
    out.push({
      from: file,
      ...(target(file, spec) !== undefined ? { to: target(file, spec)! } : {}),
      spec,
      builtin: spec.startsWith('node:') || BUILTINS.has(bare),
      typeOnly,
      dynamic,
      line: src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1,
    });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node, typeOnlyClause(node.importClause), false);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : undefined;
      add(node.moduleSpecifier.text, node, node.isTypeOnly || (!!named && named.length > 0 && named.every((e) => e.isTypeOnly)), false);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      add(node.arguments[0].text, node, false, true);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      // `typeof import('./x.js')`: a type, erased.
      add(node.argument.literal.text, node, true, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

export function importGraph(files = productionModules()): Import[] {
  return files.flatMap((f) => importsOf(f));
}

/**
 * Every cycle among modules, one per strongly connected component of more than one module
 * (or a module importing itself): the components, each sorted. Type-only imports count —
 * a cycle of types still means two modules that cannot be read one without the other.
 */
export function cycles(edges: Import[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) if (e.to) (next.get(e.from) ?? next.set(e.from, new Set()).get(e.from)!).add(e.to);
  // Tarjan's algorithm, iterative enough for a tree of a few hundred modules.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || next.get(v)?.has(v)) out.push(comp.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!idx.has(v)) strong(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = cycles(importGraph());
  for (const c of found) console.log(c.join(' ⇄ '));
  console.log(`${found.length} cycle(s)`);
}
