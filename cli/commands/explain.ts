import { allDiagnostics, explain, lookup } from '../../core/diagnostics/index.js';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca explain CODE', 'cca explain --all'],
  description: 'Offline, from the registry: what a diagnostic code means, who is to blame and the fix.',
  flags: { all: { type: 'boolean', description: 'list every code with its blame and title' } },
  offline: true,
  examples: [
    { line: 'cca explain CCA-E0701', says: 'what that code means' },
    { line: 'cca explain --all -o json', says: 'the whole registry' },
  ],
});
const usage = spec.usage.join(' | ');

/** Offline: everything the registry knows about a code. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const json = structured(ctx.globals);
  if (values.all) {
    const defs = allDiagnostics();
    if (json) printData(ctx, defs);
    else ctx.io.stdout.write(`${defs.map((d) => `${d.code}  ${d.blame.padEnd(11)}  ${d.title}`).join('\n')}\n`);
    return;
  }
  if (positionals.length !== 1) fail('CCA-E0703', { command: 'cca explain', reason: 'give exactly one code', usage });
  const given = positionals[0]!;
  const text = explain(given);
  if (text === undefined) fail('CCA-E0712', { code: given });
  if (json) {
    const up = given.toUpperCase();
    printData(ctx, lookup(up.startsWith('CCA-') ? up : `CCA-${up}`));
  } else ctx.io.stdout.write(`${text}\n`);
}
