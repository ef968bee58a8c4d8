import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  CcaError,
  allDiagnostics,
  exitCodeFor,
  exitCodeForBlame,
  explain,
  makeDiagnostic,
  render,
  renderAll,
  toDiagnostic,
  toJson,
} from '../../core/diagnostics/index.js';
import type { Diagnostic } from '../../core/diagnostics/index.js';
import { parse } from '../../core/lang/index.js';
import { generatedDocs } from './support/docs.js';
import { examples } from './support/examples.js';
import { expectFile, repoRoot } from './support/golden.js';

const placeholders = (t: string) => [...t.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** A diagnostic of `code` with every placeholder filled by `‹name›` and a span into a sample file. */
function sample(code: string): { d: Diagnostic; sources: Map<string, string> } {
  const def = allDiagnostics().find((x) => x.code === code)!;
  const params = Object.fromEntries([...placeholders(def.cause), ...placeholders(def.fix)].map((p) => [p, `‹${p}›`]));
  const d = makeDiagnostic(code, params);
  d.span = { file: 'sample.cca', line: 2, col: 14, endLine: 2, endCol: 19 };
  d.requestId = 'r-golden-0001';
  return { d, sources: new Map([['sample.cca', 'service web {\n  replicas = three\n}\n']]) };
}

describe('the registry', () => {
  const defs = allDiagnostics();

  test('codes are unique, well formed, and in the range of their area', () => {
    expect(new Set(defs.map((d) => d.code)).size).toBe(defs.length);
    for (const d of defs) {
      expect(d.code).toMatch(/^CCA-E\d{4}$/);
      expect(d.title.length).toBeGreaterThan(0);
      expect(d.cause.length).toBeGreaterThan(0);
      expect(d.fix.length).toBeGreaterThan(0);
      expect(Object.keys(exitCodeForBlame)).toContain(d.blame);
    }
  });

  test('blame decides the exit code', () => {
    expect(exitCodeForBlame).toEqual({ user: 1, environment: 2, external: 3, bug: 70 });
    expect(exitCodeFor([])).toBe(0);
    expect(exitCodeFor([makeDiagnostic('CCA-E0001', {}), makeDiagnostic('CCA-E0210', {})])).toBe(70);
  });

  test('explain works offline for every code, with or without the prefix, and not for unknown codes', () => {
    for (const d of defs) {
      const text = explain(d.code)!;
      expect(text).toContain(d.title);
      expect(text).toContain(d.cause);
      expect(text).toContain(d.fix);
      expect(explain(d.code.slice(4).toLowerCase())).toBe(text);
    }
    expect(explain('CCA-E9999')).toBeUndefined();
  });
});

describe('golden renderings of every code in all three modes', () => {
  for (const def of allDiagnostics()) {
    test(def.code, () => {
      const { d, sources } = sample(def.code);
      const text = [
        '== plain',
        render(d, 'plain', { sources }),
        '== verbose',
        render(d, 'verbose', { sources }),
        '== json',
        JSON.stringify(JSON.parse(render(d, 'json')), null, 2),
        '',
      ].join('\n');
      expectFile(`test/core/golden/codes/${def.code}.txt`, text);
    });
  }
});

describe('examples: every reachable language and spec code comes out of parse()', () => {
  for (const [code, source] of Object.entries(examples)) {
    test(code, () => {
      const r = parse(source, 'example.cca');
      expect(r.diagnostics.map((d) => d.code)).toContain(code);
      const sources = new Map([['example.cca', source]]);
      const text = ['== source', source, '== plain', renderAll(r.diagnostics, 'plain', { sources }), '== json', renderAll(r.diagnostics, 'json'), ''].join('\n');
      expectFile(`test/core/golden/parse/${code}.txt`, text);
    });
  }

  test('every E02xx and E03xx code has an example, except those no single file can reach', () => {
    // E0323 needs the cluster's service names (checked at apply; see lang.test.ts).
    // E0330/E0331 need inputs of 64 KiB and 256 KiB, too large for a readable example, and
    // E0332/E0333 are checked at apply (all four: test/core/spec-limits.test.ts).
    const unreachable = new Set(['CCA-E0215', 'CCA-E0316', 'CCA-E0317', 'CCA-E0323', 'CCA-E0330', 'CCA-E0331', 'CCA-E0332', 'CCA-E0333']);
    const missing = allDiagnostics()
      .map((d) => d.code)
      .filter((c) => /^CCA-E0[23]/.test(c) && !unreachable.has(c) && !(c in examples));
    expect(missing).toEqual([]);
  });
});

describe('rendering', () => {
  test('JSON has a stable shape and key order', () => {
    const { d } = sample('CCA-E0210');
    expect(Object.keys(toJson(d))).toEqual(['code', 'blame', 'exitCode', 'title', 'message', 'fix', 'params', 'span', 'requestId']);
    const bare = makeDiagnostic('CCA-E0001', { where: 'x', reason: 'y' });
    expect(Object.keys(toJson(bare))).toEqual(['code', 'blame', 'exitCode', 'title', 'message', 'fix', 'params']);
  });

  test('the caret sits under the span, tabs kept', () => {
    const d = makeDiagnostic('CCA-E0210', { where: 'service web', field: 'replica', hint: 'did you mean `replicas`?' });
    d.span = { file: 'f.cca', line: 2, col: 2, endLine: 2, endCol: 9 };
    const out = render(d, 'plain', { sources: new Map([['f.cca', 'service web {\n\treplica = 3\n}']]) });
    expect(out).toBe(
      'error CCA-E0210: f.cca:2:2: service web has no field `replica`\n  |\n2 | \treplica = 3\n  | \t^^^^^^^\n  fix: did you mean `replicas`?',
    );
  });

  test('an unregistered code is reported as a bug, not thrown', () => {
    const d = makeDiagnostic('CCA-E9999', {});
    expect(d.blame).toBe('bug');
  });

  test('a thrown non-CcaError becomes CCA-E0001 without its stack', () => {
    const e = new TypeError('boom\n    at secret (/home/x/file.ts:1:1)');
    const d = toDiagnostic(e, 'the parser', 'r-1');
    expect(d.code).toBe('CCA-E0001');
    expect(d.message).toBe('an unexpected failure happened in the parser: TypeError: boom');
    expect(d.requestId).toBe('r-1');
    expect(render(d, 'verbose')).not.toMatch(/\bat .*:\d+:\d+/);
    expect(toDiagnostic(new CcaError('CCA-E0101', { revision: 1, compactRevision: 5 }), 'x').code).toBe('CCA-E0101');
    expect(toDiagnostic('a string', 'x').message).toContain('non-error value');
  });
});

describe('generated docs', () => {
  const docs = generatedDocs();
  test('docs/errors and docs/keys.md agree with the registry and the key layout', () => {
    for (const [path, text] of docs) expectFile(path, text);
  });

  test('docs/errors holds no page for a code that is not registered', () => {
    const dir = resolve(repoRoot, 'docs/errors');
    if (!existsSync(dir)) return;
    const stale = readdirSync(dir).filter((f) => !docs.has(`docs/errors/${f}`));
    expect(stale).toEqual([]);
  });
});
