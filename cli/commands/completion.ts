import type { CommandArgs, Context } from '../context.js';
import { bashScript, completionModel, fishScript, zshScript } from '../completion.js';
import { fail } from '../exit.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca completion bash|zsh|fish'],
  description: 'Prints a shell completion script made from the commands\' declarations: commands, their verbs and kinds, every flag and the values it takes.',
  flags: {},
  offline: true,
  outputs: ['plain'],
  words: ['bash', 'zsh', 'fish'],
  examples: [
    { line: 'cca completion bash', says: 'then: source <(cca completion bash), or save it under /etc/bash_completion.d/cca' },
    { line: 'cca completion zsh', says: 'then: source <(cca completion zsh) in ~/.zshrc' },
    { line: 'cca completion fish', says: 'then: cca completion fish > ~/.config/fish/completions/cca.fish' },
  ],
});

const SHELLS = { bash: bashScript, zsh: zshScript, fish: fishScript } as const;

export async function run(ctx: Context, { positionals }: CommandArgs): Promise<void> {
  const [shell, ...extra] = positionals;
  const make = shell !== undefined && Object.hasOwn(SHELLS, shell) ? SHELLS[shell as keyof typeof SHELLS] : undefined;
  if (!make || extra.length > 0) fail('CCA-E0703', { command: 'cca completion', reason: shell ? `the shells are bash, zsh and fish, not "${[shell, ...extra].join(' ')}"` : 'name the shell: bash, zsh or fish', usage: spec.usage.join(' | ') });
  ctx.io.stdout.write(make(await completionModel(ctx.commands)));
}
