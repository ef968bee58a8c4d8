import fc from 'fast-check';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { lookup } from '../../core/diagnostics/index.js';
import { format, formatSource, parse } from '../../core/lang/index.js';
import { validateNode, validateService } from '../../core/model/index.js';
import { repoRoot } from './support/golden.js';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('core/ is environment-free (it runs in the browser and in the simulation)', () => {
  const sources = files(resolve(repoRoot, 'core')).map((p) => ({ path: relative(repoRoot, p), text: readFileSync(p, 'utf8') }));
  const forbidden: [RegExp, string][] = [
    [/from\s+['"]node:/, 'a node: import'],
    [/\brequire\(/, 'require()'],
    [/\bDate\.now\b|\bnew Date\(/, 'the clock'],
    [/\bperformance\.now\b/, 'the clock'],
    [/\bMath\.random\b|\bcrypto\./, 'randomness'],
    [/\bprocess\./, 'the process'],
    [/\bset(Timeout|Interval|Immediate)\(/, 'timers'],
    [/\bfetch\(/, 'the network'],
  ];
  test('no I/O, clock, randomness or process access', () => {
    const found = sources.flatMap(({ path, text }) => forbidden.filter(([re]) => re.test(text)).map(([, what]) => `${path}: ${what}`));
    expect(found).toEqual([]);
  });
  test('imports are relative or zod only', () => {
    const bad = sources.flatMap(({ path, text }) =>
      [...text.matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]!).filter((m) => !m.startsWith('.') && m !== 'zod').map((m) => `${path}: ${m}`),
    );
    expect(bad).toEqual([]);
  });
  test('no `any` without a comment saying why', () => {
    const bad = sources.flatMap(({ path, text }) =>
      text.split('\n').flatMap((line, i) => (/(:\s*any\b|as any\b|<any>)/.test(line) && !/\/\/|\/\*/.test(line) ? [`${path}:${i + 1}`] : [])),
    );
    expect(bad).toEqual([]);
  });
});

describe('no parser or validator path surfaces a raw Error or a stack trace', () => {
  const coded = (ds: { code: string; message: string }[]) => {
    for (const d of ds) {
      expect(lookup(d.code)).toBeDefined();
      expect(d.message).not.toMatch(/\n\s+at /);
    }
  };

  test('a bug inside the parser becomes CCA-E0001, not a throw', () => {
    // A non-string slips past the types only through a bug in a caller: the boundary still holds.
    const r = parse(undefined as unknown as string, 'x.cca');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0001']);
    expect(r.diagnostics[0]!.message).not.toMatch(/\n\s+at /);
    expect(formatSource(null as unknown as string).diagnostics.map((d) => d.code)).toEqual(['CCA-E0001']);
    expect(format(42 as unknown as string)).toBe(42);
  });

  test('the validators take anything, including hostile objects', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('gotcha');
        },
        ownKeys() {
          throw new Error('gotcha');
        },
      },
    );
    const v = validateService(hostile);
    expect(v.ok === false && v.issues.map((i) => i.code)).toEqual(['CCA-E0001']);
    const n = validateNode(hostile);
    expect(n.ok === false && n.diagnostics.map((d) => d.code)).toEqual(['CCA-E0001']);
    fc.assert(
      fc.property(fc.anything({ maxDepth: 3, withObjectString: true, withNullPrototype: true }), (x) => {
        const r = validateService(x);
        if (!r.ok) for (const i of r.issues) expect(lookup(i.code)).toBeDefined();
        const nr = validateNode(x);
        if (!nr.ok) coded(nr.diagnostics);
      }),
      { numRuns: 2_000 },
    );
  });

  test('files over the size limit are refused with a code', () => {
    const r = parse('#'.repeat(4 * 1024 * 1024 + 1), 'big.cca');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CCA-E0215']);
  });

  test('too many problems stop at the cap with CCA-E0220', () => {
    const r = parse('@ '.repeat(1000), 'many.cca');
    expect(r.diagnostics.length).toBe(51);
    expect(r.diagnostics[50]!.code).toBe('CCA-E0220');
  });
});
