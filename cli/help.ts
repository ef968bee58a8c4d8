import { globalFlags } from './globals.js';
import { outputsOf, type CommandSpec, type Flags, type FlagSpec } from './spec.js';

/** `-y, --yes` or `    --timeout DURATION`: short flags line up. */
export function flagName(name: string, f: FlagSpec): string {
  const long = `--${name}${f.type === 'string' ? ` ${f.value ?? 'VALUE'}` : ''}`;
  return f.short ? `-${f.short}, ${long}` : `    ${long}`;
}

/** The description with what the flag is when not given and where else it is read from. */
export function flagText(f: FlagSpec): string {
  const notes = [f.choices ? `one of ${f.choices.join(', ')}` : '', f.default ? `default: ${f.default}` : '', f.env ? `env ${f.env}` : ''].filter(Boolean);
  return notes.length > 0 ? `${f.description} (${notes.join('; ')})` : f.description;
}

export function flagLines(flags: Flags): string[] {
  const entries = Object.entries(flags);
  const width = Math.max(0, ...entries.map(([n, f]) => flagName(n, f).length));
  return entries.map(([n, f]) => `  ${flagName(n, f).padEnd(width)}  ${flagText(f)}`);
}

/** `cca COMMAND --help` and `cca help COMMAND`. */
export function renderHelp(name: string, summary: string, spec: CommandSpec): string {
  const flags = Object.keys(spec.flags).length > 0 ? ['', 'flags:', ...flagLines(spec.flags)] : [];
  const lines = [
    `cca ${name}: ${summary}`,
    '',
    'usage:',
    ...spec.usage.map((u) => `  ${u}`),
    ...(spec.description ? ['', spec.description] : []),
    ...flags,
    ...(spec.raw ? [] : ['', `output (-o): ${outputsOf(spec).join(', ')}`]),
    '',
    'examples:',
    ...spec.examples.flatMap((e) => [`  # ${e.says}`, `  ${e.line}`]),
    '',
    spec.raw ? `its flags are its own: \`cca ${name} --help\` lists them` : 'global flags (every command): `cca help` lists them',
  ];
  return `${lines.join('\n')}\n`;
}

/** `cca help`: the commands and the global flags. */
export function renderIndex(commands: Readonly<Record<string, { summary: string }>>): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const lines = [
    'usage: cca COMMAND [ARGS…] [FLAGS…]',
    '',
    'commands:',
    ...Object.entries(commands).map(([n, c]) => `  ${n.padEnd(width)}  ${c.summary}`),
    '',
    'global flags:',
    ...flagLines(globalFlags),
    '',
    'Flags beat the environment, which beats the config file\'s context. `cca help COMMAND` (or',
    '`cca COMMAND --help`) describes a command\'s flags with examples.',
  ];
  return `${lines.join('\n')}\n`;
}
