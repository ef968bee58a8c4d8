import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { confirm } from '../confirm.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca fence node NAME [--yes]'],
  description: 'Asserts that a lost node\'s workloads are stopped (the machine is off or cut off), so its replicas with volumes are replaced. It asks first; without a terminal it needs --yes. A ready node is refused.',
  flags: {
    yes: { type: 'boolean', short: 'y', description: 'assert it without asking (needed when standard input is not a terminal)' },
    confirm: { type: 'boolean', description: 'the older spelling of --yes' },
  },
  words: ['node'],
  examples: [{ line: 'cca fence node node3 --yes', says: 'node3 is powered off: replace its stateful replicas now' }],
});
const usage = spec.usage.join(' | ');

const fenceAnswer = z.looseObject({ fenced: z.string(), tenure: z.int(), revision: z.int() });

/**
 * An operator's assertion that a lost node's workloads are stopped (the machine is off or
 * cut off): the proof a stateful replica (one with a volume) needs before it is replaced.
 * Never implied: it asks, and without a terminal nothing is sent without --yes (CCA-E0721).
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [kind, name, ...extra] = positionals;
  if (kind !== 'node' && kind !== 'nodes') fail('CCA-E0703', { command: 'cca fence', reason: `only nodes can be fenced, not "${kind ?? ''}"`, usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca fence', reason: 'name exactly one node', usage });
  const yes = values.yes === true || values.confirm === true;
  // Without a terminal the refusal is fence's own, which says what to make sure of first.
  if (!yes && !ctx.io.stdinIsTTY) fail('CCA-E0721', { node: name });
  await confirm(ctx, `fencing node ${name} (asserting that none of its workloads runs any more)`, yes);
  const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/fence`, fenceAnswer, { confirm: true });
  if (structured(ctx.globals)) printData(ctx, r);
  else ctx.io.stdout.write(`node ${r.fenced} fenced (tenures up to ${r.tenure}) at revision ${r.revision}; its replicas with volumes are replaced now\n`);
}
