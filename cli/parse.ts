import { parseArgs } from 'node:util';
import { makeDiagnostic, messageOf } from '../core/diagnostics/index.js';
import type { Values } from './context.js';
import { ExitError } from './exit.js';
import { globalFlags } from './globals.js';
import { parserOptions, type CommandSpec } from './spec.js';

const MODES: readonly string[] = globalFlags.output.choices;

/** The first argument that is neither a global flag nor a global flag's value. */
export function findCommand(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a === '-') return i;
    const name = a.replace(/^--?/, '').split('=')[0]!;
    const def = Object.entries(globalFlags).find(([long, o]) => long === name || ('short' in o && o.short === name))?.[1];
    if (def?.type === 'string' && !a.includes('=')) i++;
  }
  return -1;
}

/** Exactly what the parser accepts for a command: the global flags and its own. */
export function acceptedOptions(spec: CommandSpec): ReturnType<typeof parserOptions> {
  const all = { ...parserOptions(globalFlags), ...parserOptions(spec.flags) };
  // bundle's -o may be given twice: a mode and a file.
  if (spec.fileFlag) all.output = { ...all.output!, multiple: true };
  return all;
}

/** A command's arguments (the line without its name) against its declared flags; a bad flag is CCA-E0703. */
export function parseLine(name: string, spec: CommandSpec, args: readonly string[]): { values: Values; positionals: string[] } {
  try {
    const r = parseArgs({ args: [...args], options: acceptedOptions(spec), allowPositionals: true, strict: true });
    const values = r.values as Values;
    if (spec.fileFlag) splitOutput(values, spec.fileFlag);
    return { values, positionals: r.positionals };
  } catch (e) {
    const reason = messageOf(e).replace(/\. To specify a positional argument.*$/s, '');
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: `cca ${name}`, reason, usage: spec.usage.join(' | ') })]);
  }
}

/**
 * `cca bundle -o FILE --output json`: for a command that writes a file, each -o/--output
 * value is an output mode when it names one, else the file.
 */
function splitOutput(values: Values, fileFlag: string): void {
  const all = (values.output as string[] | undefined) ?? [];
  const modes = all.filter((v) => MODES.includes(v));
  const files = all.filter((v) => !MODES.includes(v));
  if (modes.length > 0) values.output = modes[modes.length - 1];
  else delete values.output;
  if (files.length > 0 && values[fileFlag] === undefined) values[fileFlag] = files[files.length - 1];
}
