import type { Client } from './client.js';
import type { Io } from './io.js';
import type { CommandSpec, OutputMode } from './spec.js';

export type { OutputMode };

export interface Globals {
  server: string;
  token?: string;
  /** A CA file to trust (beside the system roots) for an https:// server: --ca, CCA_CA or the config file. */
  ca?: string;
  verbose: boolean;
  output: OutputMode;
  requestId?: string;
  /** Where the server came from, for messages: flag, env, config, the local system (`npm start`) or default. */
  serverFrom: 'flag' | 'env' | 'config' | 'local' | 'default';
  /** The config file's context in use, when one is. */
  context?: string;
}

/** What every command receives. The client is made on first use, so offline commands never need a server. */
export interface Context {
  io: Io;
  globals: Globals;
  client(): Client;
  /** Colour escapes only on a terminal, never with NO_COLOR or --no-color. */
  color: boolean;
  /** The command table's names and summaries, for `cca help` (which the table itself loads). */
  commands: Readonly<Record<string, { summary: string; load(): Promise<CommandModule> }>>;
}

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface CommandArgs {
  positionals: string[];
  values: Values;
}

/** A command module: its declaration (usage, flags, examples) and one async function. */
export interface CommandModule {
  spec: CommandSpec;
  run(ctx: Context, args: CommandArgs): Promise<void | number>;
}
