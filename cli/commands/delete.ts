import { deleteAnswer } from '../api.js';
import type { CommandArgs, Context } from '../context.js';
import { confirm } from '../confirm.js';
import { fail } from '../exit.js';
import { printData, structured } from '../output.js';
import { currentVolumes, describeReleases, releasedBy } from '../volume-release.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca delete service NAME [--yes]'],
  description: 'Deletes a service: its replicas stop within their grace period, and its volumes are released (kept for their keep_for).',
  flags: { yes: { type: 'boolean', short: 'y', description: 'delete without asking (needed when standard input is not a terminal)' } },
  words: ['service'],
  examples: [
    { line: 'cca delete service web', says: 'say what goes, ask, delete' },
    { line: 'cca delete service web --yes -o json', says: 'in a script' },
  ],
});
const usage = spec.usage.join(' | ');

export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [kind, name, ...extra] = positionals;
  if (kind !== 'service' && kind !== 'services') fail('CCA-E0703', { command: 'cca delete', reason: `only services can be deleted, not "${kind ?? ''}"`, usage });
  if (!name || extra.length > 0) fail('CCA-E0703', { command: 'cca delete', reason: 'name exactly one service', usage });
  const releases = releasedBy(await currentVolumes(ctx), new Set([name]), new Map());
  if (releases.length > 0 && !structured(ctx.globals)) ctx.io.stdout.write(describeReleases(releases));
  const volumes = releases.length > 0 ? ` and its volumes are released` : '';
  await confirm(ctx, `deleting service ${name} (its replicas stop${volumes})`, values.yes === true);
  const r = await ctx.client().json('DELETE', `/v1/services/${encodeURIComponent(name)}`, deleteAnswer);
  if (structured(ctx.globals)) printData(ctx, r);
  else ctx.io.stdout.write(`service ${r.deleted} deleted at revision ${r.revision}; its replicas stop within their grace period\n`);
}
