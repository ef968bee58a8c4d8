import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { follow } from '../follow.js';
import { table } from '../render/table.js';
import { list, tableOf, type Kind, type Listing } from '../views.js';

export const usage = 'cca get services|replicas|nodes [NAME] [--service NAME] [-w] [-o plain|wide|json] | cca get endpoints SERVICE [-w] | cca get volumes [--service NAME] [-w]';
export const options = { watch: { type: 'boolean', short: 'w' }, service: { type: 'string' } } as const;

const KINDS: Record<string, Kind> = { service: 'services', services: 'services', svc: 'services', replica: 'replicas', replicas: 'replicas', node: 'nodes', nodes: 'nodes', endpoints: 'endpoints', endpoint: 'endpoints', ep: 'endpoints', volumes: 'volumes', volume: 'volumes', vol: 'volumes' };

/** JSON is indented once, or one compact line per listing when following (JSON lines). */
function show(ctx: Context, l: Listing, watching: boolean): string {
  if (ctx.globals.output === 'json') return watching ? JSON.stringify(l) : JSON.stringify(l, null, 2);
  if (l.items.length === 0) return `no ${l.kind}`;
  const t = tableOf(l, ctx.globals.output === 'wide');
  return table(t.headers, t.rows);
}

/** A table (or the JSON listing); with -w, redrawn after every change until interrupted. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [given, name, ...extra] = positionals;
  const kind = given ? KINDS[given] : undefined;
  if (!kind) fail('CCA-E0703', { command: 'cca get', reason: `KIND must be services, replicas, nodes, endpoints or volumes, not "${given ?? ''}"`, usage });
  if (kind === 'endpoints' && name === undefined) fail('CCA-E0703', { command: 'cca get endpoints', reason: 'name the service: cca get endpoints SERVICE', usage });
  // A volume has no name of its own (it is one per node, service and volume name).
  if (kind === 'volumes' && name !== undefined) fail('CCA-E0703', { command: 'cca get volumes', reason: `unexpected "${name}": choose a service with --service NAME`, usage });
  if (extra.length > 0) fail('CCA-E0703', { command: 'cca get', reason: `unexpected "${extra.join(' ')}"`, usage });
  const service = values.service as string | undefined;
  const read = () => list(ctx.client(), kind, name, service ? { service } : {});
  const watching = values.watch === true;
  const first = await read();
  let last = show(ctx, first, watching);
  ctx.io.stdout.write(`${last}\n`);
  if (!watching) return;
  await follow(ctx, {
    from: first.revision + 1,
    signal: ctx.io.signal,
    refresh: async () => {
      const l = await read();
      const text = show(ctx, l, true);
      if (text.replace(/"revision":\d+/, '') === last.replace(/"revision":\d+/, '')) return false;
      last = text;
      if (ctx.globals.output === 'json') ctx.io.stdout.write(`${text}\n`);
      else if (ctx.io.stdout.isTTY) ctx.io.stdout.write(`\u001b[H\u001b[2J${text}\n`);
      else ctx.io.stdout.write(`\n# revision ${l.revision}\n${text}\n`);
      return false;
    },
  });
}
