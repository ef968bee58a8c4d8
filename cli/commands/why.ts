import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { whyAnswer } from '../api.js';
import { redactDeep } from '../../core/keys.js';
import { renderWhy } from '../render/why.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca why replica|node|service NAME'],
  description: 'The decision chain behind a subject, newest first, with the evidence each decision read; -v prints each value whole.',
  flags: {},
  words: ['replica', 'node', 'service'],
  examples: [
    { line: 'cca why replica web-3f2a-1', says: 'why it is pending, or where it runs and why' },
    { line: 'cca why node node2 -o yaml', says: 'the chain as YAML' },
  ],
});
const usage = spec.usage.join(' | ');
const KINDS = ['replica', 'node', 'service'];

/** The decision chain behind a subject, from the server's decision records. */
export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [given, name, ...extra] = positionals;
  const kind = given?.replace(/s$/, '');
  if (!kind || !KINDS.includes(kind)) fail('CCA-E0703', { command: 'cca why', reason: `KIND must be replica, node or service, not "${given ?? ''}"`, usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca why', reason: 'name exactly one subject', usage });
  const answer = await ctx.client().json('GET', `/v1/why/${kind}/${encodeURIComponent(name)}`, whyAnswer);
  // The terminal's current value is the stored fact as it is now: a spec's secrets must not ride along.
  if (structured(ctx.globals)) printData(ctx, redactDeep(answer));
  else ctx.io.stdout.write(`${renderWhy(answer, ctx.color, ctx.globals.verbose)}\n`);
}
