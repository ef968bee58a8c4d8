import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca node reset|cordon|uncordon|drain|remove NAME'],
  description: 'Node operations (admin), each a decision record (`cca why node NAME`): reset deletes its credential; cordon and uncordon stop and allow placements; drain replaces its replicas elsewhere; remove forgets a lost node.',
  flags: {},
  words: ['reset', 'cordon', 'uncordon', 'drain', 'remove'],
  examples: [
    { line: 'cca node drain node2', says: 'move everything off node2 within each service\'s update limits' },
    { line: 'cca node reset node2', says: 'the join token may enroll node2 again' },
  ],
});
const usage = spec.usage.join(' | ');

const resetAnswer = z.looseObject({ reset: z.string(), revision: z.int(), decision: z.string() });
const opAnswer = z.looseObject({ node: z.string(), revision: z.int(), decision: z.string() });

const done: Record<string, (node: string) => string> = {
  cordon: (n) => `node ${n} cordoned: it takes no new placements; what runs there stays`,
  uncordon: (n) => `node ${n} uncordoned: it takes new placements again`,
  drain: (n) => `node ${n} draining: no new placements, its replicas are replaced elsewhere within each service's update limits (\`cca get replicas\`)`,
  remove: (n) => `node ${n} removed: its replicas are replaced and its records forgotten`,
};

/**
 * Node operations (admin), each audited as a decision (`cca why node NAME`):
 * - reset: delete a node's credential; the join token may enroll the name again;
 * - cordon / uncordon: no new placements on the node / placements again;
 * - drain: cordon, and replace its replicas elsewhere first, within each service's
 *   rolling-update limits (a stateful one moves once its node reports it stopped);
 * - remove: forget a lost node (not registered): its replicas are replaced at once.
 */
export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [verb, name, ...extra] = positionals;
  if (verb !== 'reset' && (verb === undefined || !Object.hasOwn(done, verb))) {
    fail('CCA-E0703', { command: 'cca node', reason: verb ? `unknown action "${verb}"` : 'say reset, cordon, uncordon, drain or remove', usage });
  }
  if (!name || extra.length > 0) fail('CCA-E0703', { command: `cca node ${verb}`, reason: 'name exactly one node', usage });
  if (verb === 'reset') {
    const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/reset`, resetAnswer);
    if (structured(ctx.globals)) printData(ctx, r);
    else ctx.io.stdout.write(`node ${r.reset}: credential deleted at revision ${r.revision}; the join token may enroll it again (see \`cca why node ${r.reset}\`)\n`);
    return;
  }
  const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/${verb}`, opAnswer);
  if (structured(ctx.globals)) printData(ctx, r);
  else ctx.io.stdout.write(`${done[verb]!(r.node)} at revision ${r.revision} (see \`cca why node ${r.node}\`)\n`);
}
