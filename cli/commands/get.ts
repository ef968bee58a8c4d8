import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { follow } from '../follow.js';
import { formatData, structured } from '../output.js';
import { table } from '../render/table.js';
import { list, nameLines, tableOf, type Kind, type Listing } from '../views.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca get services|replicas|nodes [NAME] [--service NAME] [-w] [-o plain|wide|json|yaml|name]', 'cca get endpoints SERVICE [-w]', 'cca get volumes [--service NAME] [-w]'],
  description: 'A table of what the server shows (or its listing as JSON or YAML, or kind/name lines); with -w, again after every change until Ctrl-C.',
  flags: {
    watch: { type: 'boolean', short: 'w', description: 'follow: print the listing again after every change' },
    service: { type: 'string', value: 'NAME', description: 'only the replicas or volumes of this service' },
  },
  outputs: ['plain', 'wide', 'json', 'yaml', 'name'],
  words: ['services', 'replicas', 'nodes', 'endpoints', 'volumes'],
  examples: [
    { line: 'cca get services -o wide', says: 'services with their rollouts and pending reasons' },
    { line: 'cca get replicas --service web -w', says: 'follow one service\'s replicas' },
    { line: 'cca get nodes -o name', says: 'node/NAME lines, for scripts' },
    { line: 'cca get endpoints web -o yaml', says: 'where the service\'s traffic may go, as YAML' },
  ],
});
const usage = spec.usage.join(' | ');

const KINDS: Record<string, Kind> = { service: 'services', services: 'services', svc: 'services', replica: 'replicas', replicas: 'replicas', node: 'nodes', nodes: 'nodes', endpoints: 'endpoints', endpoint: 'endpoints', ep: 'endpoints', volumes: 'volumes', volume: 'volumes', vol: 'volumes' };

/** JSON is indented once, or one compact line per listing when following (JSON lines); YAML one document per listing. */
function show(ctx: Context, l: Listing, watching: boolean): string {
  const output = ctx.globals.output;
  if (output === 'json') return watching ? JSON.stringify(l) : JSON.stringify(l, null, 2);
  if (output === 'yaml') return `${watching ? '---\n' : ''}${formatData('yaml', l).trimEnd()}`;
  if (output === 'name') return nameLines(l).join('\n');
  if (l.items.length === 0) return `no ${l.kind}`;
  const t = tableOf(l, output === 'wide');
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
  if (last !== '') ctx.io.stdout.write(`${last}\n`);
  if (!watching) return;
  await follow(ctx, {
    from: first.revision + 1,
    signal: ctx.io.signal,
    refresh: async () => {
      const l = await read();
      const text = show(ctx, l, true);
      if (text.replace(/"revision":\d+/, '') === last.replace(/"revision":\d+/, '')) return false;
      last = text;
      if (structured(ctx.globals)) ctx.io.stdout.write(`${text}\n`);
      else if (ctx.io.stdout.isTTY) ctx.io.stdout.write(`\u001b[H\u001b[2J${text}\n`);
      else ctx.io.stdout.write(`\n# revision ${l.revision}\n${text}\n`);
      return false;
    },
  });
}
