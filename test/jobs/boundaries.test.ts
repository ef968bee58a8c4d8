import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(root, p)).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every module a file imports, transitively (relative imports only; packages are listed). */
function closure(entry: string): { modules: Set<string>; packages: Set<string> } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (modules.has(file)) return;
    modules.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1]!;
      if (spec.startsWith('.')) visit(join(dirname(file), spec).replace(/\.js$/, '.ts'));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { modules, packages };
}

test('the simulation loads in a browser: nothing it imports touches node: or the process', () => {
  const entries = files('jobs/sim').filter((f) => !f.endsWith('cli.ts'));
  for (const e of entries) {
    const { modules, packages } = closure(e);
    expect([...packages].filter((p) => p.startsWith('node:') || ['pg', 'graphile-worker', 'etcd3'].includes(p)), e).toEqual([]);
    for (const m of modules) expect(readFileSync(join(root, m), 'utf8'), m).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
  }
});

test('controllers read no clock and no randomness except through their context', () => {
  for (const dir of ['jobs/controllers', 'jobs/placement', 'jobs/decisions', 'jobs/sim']) {
    for (const f of files(dir)) {
      const text = readFileSync(join(root, f), 'utf8');
      if (f.endsWith('cli.ts')) continue;
      expect(text, f).not.toMatch(/Date\.now|Math\.random|new Date\(\)|randomUUID|performance\.now|setTimeout|setInterval/);
    }
  }
});

test("the agent's core loads in a browser, reads no clock or randomness of its own, and imports only what the console serves", () => {
  for (const e of files('agent/core')) {
    const { modules, packages } = closure(e);
    expect([...packages].filter((p) => p !== 'zod'), e).toEqual([]);
    for (const m of modules) {
      expect(m, `${e} imports ${m}`).toMatch(/^(core|jobs|db|agent\/core)\//);
      expect(readFileSync(join(root, m), 'utf8'), m).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
    }
    // The fake runtime's real timers serve unit tests and `--runtime fake`; the simulation runs it on manual time.
    if (e.endsWith('fake-runtime.ts')) continue;
    expect(readFileSync(join(root, e), 'utf8'), e).not.toMatch(/Date\.now|Math\.random|new Date\(\)|randomUUID|performance\.now|setTimeout|setInterval/);
  }
});
