import { writeFile } from 'node:fs/promises';
import { formatSource } from '../../core/lang/index.js';
import type { Diagnostic } from '../../core/diagnostics/index.js';
import type { CommandArgs, Context } from '../context.js';
import { ExitError, fail } from '../exit.js';
import { readSources, reason } from '../files.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca fmt FILE|DIR… [--check]'],
  description: 'Offline. Rewrites .cca files in the canonical layout; files with syntax errors are left alone and reported.',
  flags: { check: { type: 'boolean', description: 'change nothing; fail (CCA-E0710) listing the files that would change, for CI' } },
  offline: true,
  examples: [
    { line: 'cca fmt services/', says: 'format a folder in place' },
    { line: 'cca fmt --check services/', says: 'in CI' },
  ],
});
const usage = spec.usage.join(' | ');

/** Offline. Rewrites files in canonical layout; --check only reports which ones would change. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  if (positionals.length === 0) fail('CCA-E0703', { command: 'cca fmt', reason: 'name at least one file or directory', usage });
  const files = await readSources(ctx.io.cwd, positionals);
  const problems: Diagnostic[] = [];
  const changed: { name: string; path: string; text: string }[] = [];
  for (const f of files) {
    const r = formatSource(f.text, f.name);
    if (!r.ok) problems.push(...r.diagnostics);
    else if (r.text !== f.text) changed.push({ ...f, text: r.text });
  }
  if (problems.length > 0) throw new ExitError(problems, new Map(files.map((f) => [f.name, f.text])));
  const names = changed.map((f) => f.name);
  if (values.check) {
    if (structured(ctx.globals)) printData(ctx, { checked: files.length, unformatted: names });
    if (changed.length > 0) fail('CCA-E0710', { count: changed.length, files: names.join(' ') });
    if (!structured(ctx.globals)) ctx.io.stdout.write(`${files.length} file(s) already formatted\n`);
    return;
  }
  for (const f of changed) {
    try {
      await writeFile(f.path, f.text);
    } catch (e) {
      fail('CCA-E0714', { file: f.name, reason: reason(e) });
    }
  }
  if (structured(ctx.globals)) printData(ctx, { checked: files.length, formatted: names });
  else ctx.io.stdout.write(`${names.map((n) => `formatted ${n}\n`).join('')}${changed.length} formatted, ${files.length - changed.length} unchanged\n`);
}
