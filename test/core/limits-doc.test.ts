import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

/**
 * docs/limits.md cannot go stale: each table row names the constant that holds its limit
 * (`path: NAME.field`, or `path: fn()` for a derived bound), and the first number of its
 * value column must equal it.
 */
const root = resolve(import.meta.dirname, '../..');
const doc = readFileSync(resolve(root, 'docs/limits.md'), 'utf8');

interface Row {
  line: string;
  value: number;
  file: string;
  path: string[];
  call: boolean;
}

function rows(): Row[] {
  const out: Row[] = [];
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const constant = /^`([\w/.-]+\.ts): ([\w.]+?)(\(\))?`$/.exec(cells[3] ?? '');
    if (!constant) continue;
    const number = /^([\d,]+)/.exec(cells[2] ?? '');
    out.push({ line, value: number ? Number(number[1]!.replaceAll(',', '')) : NaN, file: constant[1]!, path: constant[2]!.split('.'), call: constant[3] !== undefined });
  }
  return out;
}

async function resolveConstant(r: Row): Promise<unknown> {
  let v: unknown = await import(resolve(root, r.file));
  for (const p of r.path) v = (v as Record<string, unknown>)[p];
  return r.call && typeof v === 'function' ? (v as () => unknown)() : v;
}

describe('docs/limits.md', () => {
  test('has a row per limit in every area, including the sections other work adds to', () => {
    for (const h of ['## Store', '## API', '## Watches and connections', '## Language', '## Specs', '## Controllers and decisions', '## Agent', '## Agent disk']) expect(doc).toContain(h);
    expect(rows().length).toBeGreaterThan(40);
  });

  test.each(rows().map((r) => [r.path.join('.'), r] as const))('%s: the documented value is the constant', async (_name, r) => {
    expect(r.value, r.line).not.toBeNaN();
    expect(await resolveConstant(r), r.line).toBe(r.value);
  });
});
