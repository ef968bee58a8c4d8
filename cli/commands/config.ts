import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { configPath, readConfigFile, writeConfigFile, type Endpoint, type FileConfig } from '../config.js';
import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { reason } from '../files.js';
import { printData, structured } from '../output.js';
import { table } from '../render/table.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca config get-contexts', 'cca config current-context', 'cca config use-context NAME', 'cca config set-context NAME [--server URL] [--token-file FILE] [--ca FILE]'],
  description:
    'Named contexts in the config file (mode 0600): each a server, a token and a CA file. `--context NAME` (or CCA_CONTEXT) picks one for one command; use-context sets the current one. For set-context, the global --server, --ca and --token give the context\'s own.',
  flags: {
    'token-file': { type: 'string', value: 'FILE', description: 'set-context: read the context\'s token from this file (kept out of the process list and shell history)' },
  },
  offline: true,
  outputs: ['plain', 'json', 'yaml', 'name'],
  words: ['get-contexts', 'current-context', 'use-context', 'set-context'],
  examples: [
    { line: 'cca config set-context prod --server https://cca.example:7070 --token-file prod.token --ca prod-ca.pem', says: 'add (or change) a context' },
    { line: 'cca config use-context prod', says: 'commands use prod from now on' },
    { line: 'cca config current-context', says: 'which context commands use (`cca get nodes --context staging` uses another for one command)' },
    { line: 'cca config get-contexts', says: 'every context, the current one marked' },
  ],
});
const usage = spec.usage.join(' | ');

/** The contexts and which one is current; tokens are never shown. */
async function getContexts(ctx: Context, file: FileConfig): Promise<void> {
  const current = file['current-context'];
  const contexts = Object.entries(file.contexts ?? {}).map(([name, e]) => ({ name, current: name === current, server: e.server ?? null, token: e.token !== undefined, ca: e.ca ?? null }));
  if (structured(ctx.globals)) return printData(ctx, { currentContext: current ?? null, contexts });
  if (ctx.globals.output === 'name') {
    if (contexts.length > 0) ctx.io.stdout.write(`${contexts.map((c) => `context/${c.name}`).join('\n')}\n`);
    return;
  }
  if (contexts.length === 0) {
    ctx.io.stdout.write('no contexts (`cca config set-context NAME --server URL` adds one)\n');
    return;
  }
  const rows = contexts.map((c) => [c.current ? '*' : '', c.name, c.server ?? '-', c.token ? 'yes' : 'no', c.ca ?? '-']);
  ctx.io.stdout.write(`${table(['CURRENT', 'NAME', 'SERVER', 'TOKEN', 'CA'], rows)}\n`);
}

async function setContext(ctx: Context, path: string, file: FileConfig, name: string, values: CommandArgs['values']): Promise<void> {
  if (!/^[A-Za-z0-9._-]{1,63}$/.test(name)) fail('CCA-E0703', { command: 'cca config set-context', reason: `a context name is 1 to 63 of A-Z a-z 0-9 . _ -, not "${name}"`, usage });
  const was: Endpoint = file.contexts?.[name] ?? {};
  const next: Endpoint = { ...was };
  if (typeof values.server === 'string') next.server = values.server;
  if (typeof values.ca === 'string') next.ca = resolve(ctx.io.cwd, values.ca);
  if (typeof values.token === 'string') next.token = values.token;
  const tokenFile = values['token-file'];
  if (typeof tokenFile === 'string') {
    try {
      next.token = (await readFile(resolve(ctx.io.cwd, tokenFile), 'utf8')).trim();
    } catch (e) {
      fail('CCA-E0705', { file: tokenFile, reason: reason(e) });
    }
    if (next.token === '') fail('CCA-E0705', { file: tokenFile, reason: 'it is empty' });
  }
  if (!next.server) fail('CCA-E0703', { command: 'cca config set-context', reason: `context "${name}" needs a server: --server URL`, usage });
  await writeConfigFile(path, { ...file, contexts: { ...(file.contexts ?? {}), [name]: next } });
  const verb = file.contexts?.[name] ? 'changed' : 'added';
  if (structured(ctx.globals)) return printData(ctx, { context: name, [verb]: true, file: path });
  ctx.io.stdout.write(`context ${name} ${verb} in ${path}${file['current-context'] === name ? '' : ` (\`cca config use-context ${name}\` makes it current)`}\n`);
}

/** `cca config VERB`: reads (and for use-context and set-context, rewrites) the config file. */
export async function run(ctx: Context, { positionals, values }: CommandArgs): Promise<void> {
  const [verb, name, ...extra] = positionals;
  const path = configPath(ctx.io.env, values.config as string | undefined, ctx.io.cwd);
  const wantsName = verb === 'use-context' || verb === 'set-context';
  if (!spec.words.includes(verb as (typeof spec.words)[number])) fail('CCA-E0703', { command: 'cca config', reason: verb ? `unknown action "${verb}"` : 'say get-contexts, current-context, use-context or set-context', usage });
  if (extra.length > 0 || (wantsName ? name === undefined : name !== undefined)) fail('CCA-E0703', { command: `cca config ${verb}`, reason: wantsName ? 'name exactly one context' : 'it takes no arguments', usage });
  const file = await readConfigFile(path);
  if (verb === 'get-contexts') return await getContexts(ctx, file);
  if (verb === 'set-context') return await setContext(ctx, path, file, name!, values);
  if (verb === 'current-context') {
    const current = file['current-context'];
    if (structured(ctx.globals)) return printData(ctx, { currentContext: current ?? null });
    ctx.io.stdout.write(current ? `${current}\n` : 'no current context (the config file\'s top-level server and token, if any, are used)\n');
    return;
  }
  if (!file.contexts || !Object.hasOwn(file.contexts, name!)) fail('CCA-E0722', { name: name!, from: 'cca config use-context', file: path, known: Object.keys(file.contexts ?? {}).join(', ') || 'none' });
  await writeConfigFile(path, { ...file, 'current-context': name! });
  if (structured(ctx.globals)) return printData(ctx, { currentContext: name });
  ctx.io.stdout.write(`current context: ${name} (${file.contexts[name!]!.server ?? 'no server'})\n`);
}
