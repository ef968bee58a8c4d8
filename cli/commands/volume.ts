import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { roughDuration } from '../views.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca volume keep|release SERVICE VOLUME [--node NAME]'],
  description: 'An operator\'s say over a released volume\'s data: keep holds it past its keep_for; release removes that hold.',
  flags: { node: { type: 'string', value: 'NAME', default: 'every node holding it', description: 'only the copy on this node' } },
  words: ['keep', 'release'],
  examples: [
    { line: 'cca volume keep db data', says: 'keep volume data of service db past its keep_for' },
    { line: 'cca volume release db data --node node2', says: 'let the copy on node2 go' },
  ],
});
const usage = spec.usage.join(' | ');

const heldAnswer = z.looseObject({
  revision: z.int(),
  held: z.array(z.looseObject({ node: z.string(), service: z.string(), volume: z.string(), deleteAt: z.int().optional() })),
});
const releasedAnswer = z.looseObject({ revision: z.int(), released: z.array(z.string()) });

/**
 * An operator's say over a released volume's data (docs/volumes.md):
 * - keep: hold it past its keep_for — the pending deletion is cancelled while the hold stays;
 * - release: remove the hold; if the service no longer declares the volume, keep_for starts again.
 */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [verb, service, volume, ...extra] = positionals;
  if (verb !== 'keep' && verb !== 'release') fail('CCA-E0703', { command: 'cca volume', reason: verb ? `unknown action "${verb}"` : 'say keep or release', usage });
  if (!service || !volume || extra.length > 0) fail('CCA-E0703', { command: `cca volume ${verb}`, reason: 'name a service and one of its volumes', usage });
  const node = values.node as string | undefined;
  const path = `/v1/volumes/${encodeURIComponent(service)}/${encodeURIComponent(volume)}/hold${node ? `?node=${encodeURIComponent(node)}` : ''}`;
  if (verb === 'keep') {
    const r = await ctx.client().json('POST', path, heldAnswer);
    if (structured(ctx.globals)) return printData(ctx, r);
    for (const h of r.held) {
      const was = h.deleteAt === undefined ? '' : ` (its deletion in ${roughDuration(Math.max(0, h.deleteAt - Date.now()))} is cancelled)`;
      ctx.io.stdout.write(`volume ${h.volume} of ${h.service} on ${h.node} kept${was}\n`);
    }
    ctx.io.stdout.write(`held at revision ${r.revision}; \`cca volume release ${service} ${volume}\` lets it go\n`);
    return;
  }
  const r = await ctx.client().json('DELETE', path, releasedAnswer);
  if (structured(ctx.globals)) return printData(ctx, r);
  ctx.io.stdout.write(`hold on volume ${volume} of ${service} removed on ${r.released.join(', ')} at revision ${r.revision}; if ${service} no longer declares it, it is deleted after its keep_for (\`cca get volumes --service ${service}\`)\n`);
}
