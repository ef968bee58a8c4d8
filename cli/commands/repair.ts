import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca repair node NAME'],
  description: 'Asks the scheduler to rebuild a node\'s allocation after an audit finding (CCA-E0402); the node then takes placements again.',
  flags: {},
  words: ['node'],
  examples: [{ line: 'cca repair node node2', says: 'after `cca why node node2` showed the finding' }],
});
const usage = spec.usage.join(' | ');

const repairAnswer = z.looseObject({ node: z.string(), finding: z.int(), revision: z.int(), decision: z.string() });

/**
 * Ask the scheduler to repair a node with an open audit finding (CCA-E0402): it rebuilds
 * the node's allocation from its assignments, as a decision of its own, after which the
 * auditor closes the finding and the node takes placements again (`cca why node NAME`).
 */
export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [kind, name, ...extra] = positionals;
  if (kind !== 'node' && kind !== 'nodes') fail('CCA-E0703', { command: 'cca repair', reason: `only nodes can be repaired, not "${kind ?? ''}"`, usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca repair', reason: 'name exactly one node', usage });
  const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/repair`, repairAnswer);
  if (structured(ctx.globals)) printData(ctx, r);
  else ctx.io.stdout.write(`node ${r.node}: repair of the finding at revision ${r.finding} requested at revision ${r.revision}; the scheduler rebuilds its allocation (see \`cca why node ${r.node}\`)\n`);
}
