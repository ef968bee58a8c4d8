import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, test } from 'vitest';
import { layout, type Writer } from '../../core/keys.js';
import { controllers } from '../../jobs/controllers/index.js';
import { CONTROLLER_WRITERS } from '../../jobs/sim/attributing-store.js';
import { repoRoot } from '../core/support/golden.js';

/** docs/controllers.md's first table: one row per controller, its wake prefixes and the prefixes it writes. */
function rows(): { name: string; wakes: string[]; writes: string[] }[] {
  const text = readFileSync(resolve(repoRoot, 'docs/controllers.md'), 'utf8');
  const start = text.indexOf('| controller | module |');
  const table = text.slice(start, text.indexOf('\n\n', start)).split('\n').slice(2);
  const prefixes = (cell: string) => [...cell.matchAll(/`(\/[a-z-]+\/)`/g)].map((m) => m[1]!);
  return table.map((l) => {
    const cells = l.split(' | ');
    return { name: cells[0]!.replace(/^\| /, '').replace(/ \(.*$/, ''), wakes: prefixes(cells[3]!), writes: prefixes(cells[4]!) };
  });
}

test("docs/controllers.md lists each controller once, with the prefixes it wakes on and the ones core/keys.ts lets it write", () => {
  const byWriter = new Map(Object.entries(CONTROLLER_WRITERS).map(([name, writer]) => [writer as string, name]));
  const doc = rows();
  const names = doc.map((r) => byWriter.get(r.name) ?? r.name);
  expect(names.slice().sort()).toEqual(controllers().map((c) => c.name).sort());
  for (const r of doc) {
    const c = controllers().find((x) => x.name === (byWriter.get(r.name) ?? r.name))!;
    // Prefixes it wakes on for deletions only are listed too (the row says so).
    expect(r.wakes.slice().sort(), r.name).toEqual([...c.watches, ...(c.watchesDeletes ?? [])].sort());
    const writer = CONTROLLER_WRITERS[c.name];
    const owned = Object.values(layout).filter((k) => (k.writer as Writer) === writer).map((k) => k.prefix);
    // retention deletes old decisions (the controllers named in them wrote them).
    expect(r.writes.slice().sort(), r.name).toEqual(c.name === 'retention' ? ['/decisions/'] : owned.sort());
  }
});
