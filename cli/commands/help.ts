import type { Context } from '../context.js';

export const usage = 'cca help';

export async function run(ctx: Context): Promise<void> {
  const { commands } = ctx;
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const lines = [
    'usage: cca COMMAND [ARGS…] [--server URL] [--token TOKEN] [--ca FILE] [--verbose] [-o plain|wide|json] [--request-id ID]',
    '',
    'commands:',
    ...Object.entries(commands).map(([n, c]) => `  ${n.padEnd(width)}  ${c.summary}`),
    '',
    'server, token and CA: --server/--token/--ca, else CCA_SERVER/CCA_TOKEN/CCA_CA, else the config file',
    '(~/.config/cca/config.json, mode 0600). `cca COMMAND --help` shows a command\'s usage.',
  ];
  ctx.io.stdout.write(`${lines.join('\n')}\n`);
}
