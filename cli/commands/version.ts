import { readFile } from 'node:fs/promises';
import { packageRoot } from '../../core/package-root.js';
import { render, toJson, type Diagnostic } from '../../core/diagnostics/index.js';
import { healthAnswer } from '../api.js';
import type { Context } from '../context.js';
import { ExitError } from '../exit.js';
import { printData, structured } from '../output.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca version'],
  description: 'The client\'s version, and the server\'s when it answers (an unreachable server is reported, not fatal).',
  flags: {},
  examples: [{ line: 'cca version -o json', says: 'both versions, for a bug report' }],
});
const usage = spec.usage.join(' | ');

export async function cliVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(new URL('package.json', packageRoot(import.meta.url, 2)), 'utf8')) as { version: string };
  return pkg.version;
}

/** The client's version always; the server's when it answers (an unreachable server is reported, not fatal). */
export async function run(ctx: Context): Promise<void> {
  const cli = await cliVersion();
  const client = ctx.client();
  let server: { version: string } | { error: Diagnostic };
  try {
    server = { version: (await client.json('GET', '/healthz', healthAnswer)).version };
  } catch (e) {
    if (!(e instanceof ExitError)) throw e;
    server = { error: e.diagnostics[0]! };
  }
  if (structured(ctx.globals)) {
    printData(ctx, {
      cli,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      server: 'version' in server ? { url: client.server, version: server.version } : { url: client.server, error: toJson(server.error) },
    });
    return;
  }
  ctx.io.stdout.write(`cca     ${cli} (node ${process.version}, ${process.platform}-${process.arch})\n`);
  if ('version' in server) ctx.io.stdout.write(`server  ${server.version} at ${client.server}\n`);
  else ctx.io.stdout.write(`server  unknown: ${render(server.error, 'plain').split('\n')[0]}\n`);
}
