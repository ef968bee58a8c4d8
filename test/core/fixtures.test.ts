import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { renderAll } from '../../core/diagnostics/index.js';
import { FIELD_NAMES, format, parse, parseTree } from '../../core/lang/index.js';
import type { Item } from '../../core/lang/index.js';
import { repoRoot } from './support/golden.js';

const dir = resolve(repoRoot, 'fixtures');
const files = readdirSync(dir).filter((f) => f.endsWith('.cca')).sort();
const read = (f: string) => readFileSync(resolve(dir, f), 'utf8');
/** Hand-written on purpose (escapes, dense one-liners); the others are kept in canonical form. */
const NOT_CANONICAL = new Set(['syntax-tour.cca']);

describe('fixtures', () => {
  test('there are fixtures', () => expect(files.length).toBeGreaterThanOrEqual(4));

  for (const f of files) {
    test(`${f} parses without diagnostics`, () => {
      const text = read(f);
      const r = parse(text, `fixtures/${f}`);
      expect(renderAll(r.diagnostics, 'plain', { sources: new Map([[`fixtures/${f}`, text]]) })).toBe('');
      expect(r.services.length).toBeGreaterThan(0);
    });

    test(`${f}: format is idempotent and parses to the same services`, () => {
      const text = read(f);
      const once = format(text);
      expect(format(once)).toBe(once);
      expect(parse(once, f)).toEqual(parse(text, f));
      if (!NOT_CANONICAL.has(f)) expect(once).toBe(text);
    });
  }

  test('together they use every field, block, rule kind and operator of the language', () => {
    const used = new Set<string>();
    const walk = (items: Item[], where: string) => {
      for (const it of items) {
        if (it.kind === 'attr') used.add(`${where}.${it.name.value}`);
        else if (it.kind === 'block') {
          if (where !== '') used.add(`${where}.${it.type.value}`);
          walk(it.items, it.type.value);
        } else if (it.kind === 'rule') {
          used.add(`${where}.${it.keyword}`);
          used.add(`op ${it.op}`);
          if (it.weight) used.add('weight');
        } else {
          used.add(`${where}.${it.kind}`);
          if (it.kind === 'allow') used.add(it.port ? 'allow with port' : 'allow without port');
        }
      }
    };
    for (const f of files) walk(parseTree(read(f)).file!.items, '');
    const wanted = [
      ...Object.entries(FIELD_NAMES).flatMap(([block, fields]) => fields.map((x) => `${block}.${x}`)),
      ...['op ==', 'op !=', 'op in', 'op not in', 'weight', 'allow with port', 'allow without port'],
    ];
    expect(wanted.filter((w) => !used.has(w))).toEqual([]);
  });

  test('together they use every probe kind, a udp port, a raw string and a quoted label key', () => {
    const all = files.map(read).join('\n');
    for (const re of [/http\s*=\s*"/, /tcp\s*=/, /exec\s*=\s*\[/, /protocol\s*=\s*udp/, /"""/, /label\."/, /\d%/, /\dGi/, /\dms/, /1m30s/, /\dm\b/]) {
      expect(all).toMatch(re);
    }
  });
});
