import type { CommandArgs, Context } from '../context.js';
import { fail } from '../exit.js';
import { renderHelp, renderIndex } from '../help.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca help [COMMAND]'],
  flags: {},
  offline: true,
  examples: [
    { line: 'cca help', says: 'every command and the global flags' },
    { line: 'cca help apply', says: 'one command\'s flags and examples (the same as `cca apply --help`)' },
  ],
});

export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void | number> {
  const [name, ...extra] = positionals;
  if (name === undefined) {
    ctx.io.stdout.write(renderIndex(ctx.commands));
    return;
  }
  const entry = Object.hasOwn(ctx.commands, name) ? ctx.commands[name] : undefined;
  if (!entry || extra.length > 0) fail('CCA-E0703', { command: 'cca help', reason: entry ? `unexpected "${extra.join(' ')}"` : `"${name}" is not a command (\`cca help\` lists them)`, usage: spec.usage.join(' | ') });
  const mod = await entry.load();
  // A process's flags are its own: it prints them.
  if (mod.spec.raw) return await mod.run(ctx, { positionals: ['--help'], values: {} });
  ctx.io.stdout.write(renderHelp(name, entry.summary, mod.spec));
}
