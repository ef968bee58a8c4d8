/**
 * Texts that state facts the code owns, checked against the code so they stay true: the
 * fence constants in docs/agent.md and docs/controllers.md, the table count of docs/store.md,
 * and every `test/…` file a comment or a doc names.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { describe, expect, test } from 'vitest';
import { deadlines, FENCE } from '../../agent/core/fence.js';
import { allDiagnostics } from '../../core/diagnostics/index.js';
import * as schema from '../../db/postgres/schema.js';
import { repoRoot } from './support/golden.js';

const doc = (p: string) => readFileSync(resolve(repoRoot, p), 'utf8');
const s = (ms: number) => `${ms / 1000} s`;
const TTL = 10;

describe('fence constants in the docs equal agent/core/fence.ts', () => {
  test('docs/agent.md: the table, and the default-TTL arithmetic', () => {
    const text = doc('docs/agent.md');
    const rows = new Map([...text.matchAll(/^\| `FENCE\.(\w+)` \| ([\d,.]+)( ms| s)? \|/gm)].map((m) => [m[1]!, Number(m[2]!.replace(/,/g, ''))]));
    expect(Object.fromEntries(rows)).toEqual(FENCE);
    const d = deadlines(0, TTL);
    const every = (TTL * 1000) / FENCE.keepalivesPerTtl;
    expect(text).toContain(`every \`ttl / ${FENCE.keepalivesPerTtl}\` (${s(every)} with the default ${TTL} s TTL), every ${s(FENCE.keepaliveRetryMs)}`);
    expect(text).toContain(`keepalives at 0, ${every / 1000}, ${(2 * every) / 1000} s…`);
    expect(text).toContain(`fencing begins at \`t + ${s(d.fenceAt)}\`, every workload is dead by \`t + ${s(d.deadAt)}\``);
    expect(text).toContain(`cannot expire before \`t + ${s(d.earliestExpiry)}\``);
    expect(text).toContain(`the fenced copy has been dead for ≥ ${s(d.earliestExpiry - d.deadAt)}`);
  });

  test('docs/controllers.md: the agent ↔ store protocol and its grace timings', () => {
    const text = doc('docs/controllers.md');
    const every = (TTL * 1000) / FENCE.keepalivesPerTtl;
    expect(text).toContain(`every \`ttl / FENCE.keepalivesPerTtl\` (${s(every)} with the default ${TTL} s TTL)`);
    expect(text).toContain(`\`ttl − FENCE.marginMs\` (${TTL} s − ${s(FENCE.marginMs)})`);
    expect(text).toContain(`(TTL ${TTL} s, keepalive ${s(every)}, margin ${s(FENCE.marginMs)}, kill budget ${s(FENCE.killMs)},`);
    // No other statement of a keepalive period or margin survives beside these.
    expect([...text.matchAll(/keepalive (\d[\d.]*) s|margin (\d[\d.]*) s/g)].map((m) => Number(m[1] ?? m[2]))).toEqual([every / 1000, FENCE.marginMs / 1000]);
  });
});

test('docs/store.md names every Postgres table of the drizzle schema, and counts them right', () => {
  const tables = Object.values(schema).filter((t) => is(t, PgTable)).map((t) => getTableName(t as PgTable)).sort();
  const text = doc('docs/store.md');
  const section = text.slice(text.indexOf('## Postgres: what a DBA should know'));
  const rows = [...section.matchAll(/^\| `(cca_\w+)` \|/gm)].map((m) => m[1]!);
  expect(rows.slice().sort()).toEqual(tables);
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
  expect(section).toMatch(new RegExp(`^${words[tables.length]!.replace(/^./, (c) => c.toUpperCase())} tables, created by`, 'm'));
});

test('every test/… file a comment or a doc names exists', () => {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.md', '*.js', '*.mjs'], { cwd: repoRoot, encoding: 'utf8' }).split('\n').filter(Boolean);
  const missing: string[] = [];
  let named = 0;
  for (const f of files) {
    const text = readFileSync(resolve(repoRoot, f), 'utf8');
    for (const m of text.matchAll(/(?<![\w/.])test\/[A-Za-z0-9_./-]+\.(?:ts|js|mjs|snapshot)\b/g)) {
      const p = m[0];
      named += 1;
      // ESM imports name the compiled .js of a .ts file.
      if (!existsSync(resolve(repoRoot, p)) && !existsSync(resolve(repoRoot, p.replace(/\.js$/, '.ts')))) missing.push(`${f}: ${p}`);
    }
  }
  expect(missing).toEqual([]);
  expect(named).toBeGreaterThan(50);
});

test("docs/agent.md's Diagnostics section lists every agent code (CCA-E05xx) with its title", () => {
  const text = doc('docs/agent.md');
  const section = text.slice(text.indexOf('## Diagnostics\n'), text.indexOf('## Tests and CI')).replace(/\s+/g, ' ');
  const missing = allDiagnostics()
    .filter((d) => /^CCA-E05/.test(d.code))
    .filter((d) => !section.includes(`${d.code === 'CCA-E0501' ? d.code : d.code.slice(4)}\` ${d.title}`))
    .map((d) => `${d.code} ${d.title}`);
  expect(missing).toEqual([]);
});
