import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printJson } from '../output.js';

export const usage = 'cca fence node NAME --confirm';
export const options = { confirm: { type: 'boolean' } } as const;

const fenceAnswer = z.looseObject({ fenced: z.string(), tenure: z.int(), revision: z.int() });

/**
 * An operator's assertion that a lost node's workloads are stopped (the machine is off or
 * cut off): the proof a stateful replica (one with a volume) needs before it is replaced.
 * Never implied: without --confirm nothing is sent (CCA-E0721).
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [kind, name, ...extra] = positionals;
  if (kind !== 'node' && kind !== 'nodes') fail('CCA-E0703', { command: 'cca fence', reason: `only nodes can be fenced, not "${kind ?? ''}"`, usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca fence', reason: 'name exactly one node', usage });
  if (values.confirm !== true) fail('CCA-E0721', { node: name });
  const r = await ctx.client().json('POST', `/v1/nodes/${encodeURIComponent(name)}/fence`, fenceAnswer, { confirm: true });
  if (ctx.globals.output === 'json') printJson(ctx.io, r);
  else ctx.io.stdout.write(`node ${r.fenced} fenced (tenures up to ${r.tenure}) at revision ${r.revision}; its replicas with volumes are replaced now\n`);
}
