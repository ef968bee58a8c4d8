import { z } from 'zod';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca secrets rotate'],
  description: 'Re-seals every stored secret under the server\'s current key; placed replicas keep theirs until replaced.',
  flags: {},
  words: ['rotate'],
  examples: [{ line: 'cca secrets rotate', says: 'after adding a new first key to the server\'s key file' }],
});
const usage = spec.usage.join(' | ');

const rotateAnswer = z.looseObject({ keyId: z.string(), resealed: z.int(), revision: z.int(), stillUsing: z.record(z.string(), z.int()) });

/**
 * Re-seal every stored secret under the server's current key (the first in its keyring).
 * Nothing rolls: each value keeps its id. Placed replicas keep the key they were placed
 * with until they are replaced, so an old key leaves the keyring only once nothing uses it.
 */
export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [verb, ...extra] = positionals;
  if (verb !== 'rotate' || extra.length > 0) fail('CCA-E0703', { command: 'cca secrets', reason: verb ? `unknown action "${verb}"` : 'say what to do', usage });
  const r = await ctx.client().json('POST', '/v1/secrets/rotate', rotateAnswer, {});
  if (structured(ctx.globals)) {
    printData(ctx, r);
    return;
  }
  ctx.io.stdout.write(`${r.resealed} service(s) re-sealed under key ${r.keyId} at revision ${r.revision}\n`);
  const old = Object.entries(r.stillUsing);
  if (old.length === 0) ctx.io.stdout.write('no placed replica uses another key: older keys can leave the keyring\n');
  else ctx.io.stdout.write(`placed replicas still use: ${old.map(([k, n]) => `${k} (${n} value${n === 1 ? '' : 's'})`).join(', ')}; keep those keys until they are replaced\n`);
}
