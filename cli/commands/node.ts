import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printJson } from '../output.js';

export const usage = 'cca node reset NAME';

const resetAnswer = z.looseObject({ reset: z.string(), revision: z.int(), decision: z.string() });

/**
 * Delete a node's credential (admin): it stops working at once, and the join token may
 * enroll the name again — the node's own agent does so by itself. Audited as a decision
 * (`cca why node NAME`).
 */
export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [verb, name, ...extra] = positionals;
  if (verb !== 'reset') fail('CCA-E0703', { command: 'cca node', reason: verb ? `unknown action "${verb}"` : 'say reset', usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca node reset', reason: 'name exactly one node', usage });
  const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/reset`, resetAnswer);
  if (ctx.globals.output === 'json') printJson(ctx.io, r);
  else ctx.io.stdout.write(`node ${r.reset}: credential deleted at revision ${r.revision}; the join token may enroll it again (see \`cca why node ${r.reset}\`)\n`);
}
