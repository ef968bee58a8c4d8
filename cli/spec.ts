/**
 * What a command declares about itself, in one place: its usage, every flag (type, default,
 * environment variable, description), its examples, and what completion offers. The
 * parser's options, `cca COMMAND --help`, `cca completion` and docs/cli.md are all made from it.
 */
export interface FlagSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The flag may be given more than once (the parser collects an array). */
  multiple?: boolean;
  /** The value's placeholder in help (`DURATION`, `FILE`); string flags only. */
  value?: string;
  /** What it is when not given, as text. */
  default?: string;
  /** The environment variable read when the flag is not given. */
  env?: string;
  /** The values it takes, when they are a fixed list (offered by completion). */
  choices?: readonly string[];
  description: string;
}

export type Flags = Readonly<Record<string, FlagSpec>>;

export type OutputMode = 'plain' | 'wide' | 'json' | 'yaml' | 'name';

export interface Example {
  /** A whole command line, starting with `cca`. */
  line: string;
  /** What it does, in a few words. */
  says: string;
}

export interface CommandSpec {
  /** One form per line: `cca get KIND [NAME]`. */
  usage: readonly string[];
  /** A paragraph for `--help`, beyond the summary in cli/commands.ts. */
  description?: string;
  flags: Flags;
  examples: readonly Example[];
  /** The output modes it honours (the global -o); plain, json and yaml when not said. */
  outputs?: readonly OutputMode[];
  /** Words completion offers for the first argument (verbs, kinds). */
  words?: readonly string[];
  /** The flag that `-o VALUE` sets when VALUE is not an output mode (bundle: the file to write). */
  fileFlag?: string;
  /** Never reads the config file nor talks to a server. */
  offline?: boolean;
  /** Its flags are its own process's (server, agent): everything after the name is handed over unparsed. */
  raw?: boolean;
}

export const DEFAULT_OUTPUTS: readonly OutputMode[] = ['plain', 'json', 'yaml'];

/** A command's spec, checked by the compiler and kept with its literal types. */
export function defineCommand<const S extends CommandSpec>(spec: S): S {
  return spec;
}

export function outputsOf(spec: CommandSpec): readonly OutputMode[] {
  return spec.outputs ?? DEFAULT_OUTPUTS;
}

/** The options table node:util's parseArgs takes, from declared flags. */
export function parserOptions(flags: Flags): Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> {
  return Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [name, { type: f.type, ...(f.short ? { short: f.short } : {}), ...(f.multiple ? { multiple: true } : {}) }]),
  );
}
