import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fetchTrusting, readCaFile } from '../agent/https.js';
import { CcaError, makeDiagnostic, toDiagnostic, type Diagnostic, messageOf } from '../core/diagnostics/index.js';
import { closest } from '../core/model/suggest.js';
import { Client } from './client.js';
import { commands } from './commands.js';
import { configPath, DEFAULT_SERVER, readConfig } from './config.js';
import type { CommandModule, Context, Globals, OutputMode, Values } from './context.js';
import { ExitError } from './exit.js';
import { processIo, type Io } from './io.js';
import { record, redactArgs } from './journal.js';
import { printDiagnostics } from './output.js';
import { requestIds } from './request-id.js';

/** Flags every command takes, wherever they appear on the line. */
export const globalOptions = {
  server: { type: 'string' },
  token: { type: 'string' },
  ca: { type: 'string' },
  config: { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  output: { type: 'string', short: 'o' },
  'request-id': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const MODES = ['plain', 'wide', 'json'];

/** Commands that never talk to a server and so never read the config file. */
const OFFLINE = new Set(['explain', 'fmt', 'help']);
/** Commands that take their own flags, unparsed. */
const RAW = new Set(['server', 'agent', 'migrate', 'store']);

/** The first argument that is neither a global flag nor a global flag's value. */
function findCommand(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-') || a === '-') return i;
    const name = a.replace(/^--?/, '').split('=')[0]!;
    const def = Object.entries(globalOptions).find(([long, o]) => long === name || ('short' in o && o.short === name))?.[1];
    if (def?.type === 'string' && !a.includes('=')) i++;
  }
  return -1;
}

/** Run `cca ARGV…`; resolves to the exit code. Never throws and never exits the process. */
export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const at = new Date(io.now()).toISOString();
  let globals: Globals = { server: DEFAULT_SERVER, verbose: argv.includes('--verbose') || argv.includes('-v'), output: 'plain', serverFrom: 'default' };
  let client: Client | undefined;
  let name = 'help';
  let code = 0;
  let failure: Diagnostic[] | undefined;
  try {
    const index = findCommand(argv);
    name = index < 0 ? 'help' : argv[index]!;
    const rest = index < 0 ? [...argv] : [...argv.slice(0, index), ...argv.slice(index + 1)];
    const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
    if (!entry) {
      const near = closest(name, Object.keys(commands));
      throw new ExitError([makeDiagnostic('CCA-E0702', { command: name, hint: near ? `; did you mean \`cca ${near}\`?` : '' })]);
    }
    const mod = await entry.load();
    if (RAW.has(name)) {
      // Its flags are its own: only what follows the command name.
      const r = await mod.run(undefined as unknown as Context, { positionals: argv.slice(index + 1), values: {} });
      return typeof r === 'number' ? r : 0;
    }
    const { values, positionals } = parse(name, mod, rest);
    if (mod.fileFlag) splitOutput(values, mod.fileFlag);
    globals = await resolveGlobals(io, values, !OFFLINE.has(name));
    if (values.help) {
      io.stdout.write(`usage: ${mod.usage}\n`);
      return 0;
    }
    const nextId = requestIds(io.now(), globals.requestId);
    const ctx: Context = {
      io,
      globals,
      color: io.stdout.isTTY && !io.env.NO_COLOR,
      commands,
      client: () =>
        (client ??= new Client({
          server: globals.server,
          ...(globals.token ? { token: globals.token } : {}),
          // Read when the first request is made, so offline commands never need the file.
          ...(globals.ca ? { fetch: fetchTrusting(readCaFile(globals.ca)) } : {}),
          nextRequestId: nextId,
          signal: io.signal,
        })),
    };
    const r = await mod.run(ctx, { positionals, values });
    if (typeof r === 'number') code = r;
  } catch (e) {
    const err = asExitError(e, client?.sent.at(-1)?.requestId);
    failure = err.diagnostics;
    printDiagnostics(io, globals, err.diagnostics, err.sources);
    code = err.code;
  }
  if (client?.sent.length || failure) {
    await record(io.env, {
      at,
      command: name,
      args: redactArgs(argv),
      exitCode: code,
      requests: client?.sent ?? [],
      ...(failure && !client?.sent.length ? { diagnostics: failure } : {}),
    });
  }
  return code;
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

function parse(name: string, mod: CommandModule, args: string[]): { values: Values; positionals: string[] } {
  const output = mod.fileFlag ? { output: { ...globalOptions.output, multiple: true } } : {};
  try {
    const r = parseArgs({ args, options: { ...globalOptions, ...output, ...(mod.options ?? {}) }, allowPositionals: true, strict: true });
    return { values: r.values as Values, positionals: r.positionals };
  } catch (e) {
    const reason = messageOf(e).replace(/\. To specify a positional argument.*$/s, '');
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: `cca ${name}`, reason, usage: mod.usage })]);
  }
}

/** Flags beat the environment, which beats the config file, which beats the default. */
async function resolveGlobals(io: Io, values: Values, online: boolean): Promise<Globals> {
  const output = (values.output as string | undefined) ?? 'plain';
  if (!MODES.includes(output)) {
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: 'cca', reason: `--output must be plain, wide or json, not "${output}"`, usage: 'cca COMMAND [-o plain|wide|json]' })]);
  }
  const requestId = values['request-id'];
  if (typeof requestId === 'string' && !/^[A-Za-z0-9._:-]{1,120}$/.test(requestId)) {
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: 'cca', reason: `--request-id must be 1 to 120 of A-Z a-z 0-9 . _ : -, not "${requestId}"`, usage: 'cca COMMAND --request-id ID' })]);
  }
  const file = online ? await readConfig(configPath(io.env, values.config as string | undefined, io.cwd)) : {};
  const flagServer = values.server as string | undefined;
  const server = flagServer ?? io.env.CCA_SERVER ?? file.server;
  const token = (values.token as string | undefined) ?? io.env.CCA_TOKEN ?? file.token;
  // The config file's "ca" is already relative to that file; a flag's or CCA_CA's to the cwd.
  const givenCa = (values.ca as string | undefined) ?? (io.env.CCA_CA || undefined);
  const ca = givenCa !== undefined ? resolve(io.cwd, givenCa) : file.ca;
  const serverFrom = flagServer ? 'flag' : io.env.CCA_SERVER ? 'env' : file.server ? 'config' : 'default';
  if (server && !/^https?:\/\/[^/\s]+/.test(server)) {
    const where = { flag: '--server', env: 'CCA_SERVER', config: 'the config file\'s "server"', default: '' }[serverFrom];
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: 'cca', reason: `${where} must be an http:// or https:// URL, not "${server}"`, usage: 'cca COMMAND --server http://HOST:PORT' })]);
  }
  return {
    server: server || DEFAULT_SERVER,
    serverFrom,
    ...(token ? { token } : {}),
    ...(ca ? { ca } : {}),
    verbose: values.verbose === true,
    output: output as OutputMode,
    ...(typeof values['request-id'] === 'string' ? { requestId: values['request-id'] } : {}),
  };
}

/** The boundary: whatever a command threw becomes coded diagnostics; a stray error is our bug (E0001). */
function asExitError(e: unknown, lastRequestId?: string): ExitError {
  if (e instanceof ExitError) return e;
  if (e instanceof CcaError) return new ExitError([e.diagnostic]);
  return new ExitError([toDiagnostic(e, 'the cca command line', lastRequestId)]);
}
