import { allDiagnostics, explain, lookup } from '../../core/diagnostics/index.js';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printJson } from '../output.js';

export const usage = 'cca explain CODE | cca explain --all';
export const options = { all: { type: 'boolean' } } as const;

/** Offline: everything the registry knows about a code. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const json = ctx.globals.output === 'json';
  if (values.all) {
    const defs = allDiagnostics();
    if (json) printJson(ctx.io, defs);
    else ctx.io.stdout.write(`${defs.map((d) => `${d.code}  ${d.blame.padEnd(11)}  ${d.title}`).join('\n')}\n`);
    return;
  }
  if (positionals.length !== 1) fail('CCA-E0703', { command: 'cca explain', reason: 'give exactly one code', usage });
  const given = positionals[0]!;
  const text = explain(given);
  if (text === undefined) fail('CCA-E0712', { code: given });
  if (json) {
    const up = given.toUpperCase();
    printJson(ctx.io, lookup(up.startsWith('CCA-') ? up : `CCA-${up}`));
  } else ctx.io.stdout.write(`${text}\n`);
}
