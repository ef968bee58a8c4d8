import type { Client } from './client.js';
import type { Io } from './io.js';

export type OutputMode = 'plain' | 'wide' | 'json';

export interface Globals {
  server: string;
  token?: string;
  /** A CA file to trust (beside the system roots) for an https:// server: --ca, CCA_CA or the config file. */
  ca?: string;
  verbose: boolean;
  output: OutputMode;
  requestId?: string;
  /** Where the server came from, for messages: flag, env, config or default. */
  serverFrom: 'flag' | 'env' | 'config' | 'default';
}

/** What every command receives. The client is made on first use, so offline commands never need a server. */
export interface Context {
  io: Io;
  globals: Globals;
  client(): Client;
  /** Colour escapes only on a terminal, and never with NO_COLOR. */
  color: boolean;
  /** The command table's names and summaries, for `cca help` (which the table itself loads). */
  commands: Readonly<Record<string, { summary: string }>>;
}

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface CommandArgs {
  positionals: string[];
  values: Values;
}

/** A command module: its flags, its usage line, and one async function. */
export interface CommandModule {
  usage: string;
  /** The flag that `-o VALUE` sets when VALUE is not an output mode (bundle: the file to write). */
  fileFlag?: string;
  options?: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
  run(ctx: Context, args: CommandArgs): Promise<void | number>;
}
