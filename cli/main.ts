import { fetchTrusting, readCaFile } from '../agent/https.js';
import { CcaError, makeDiagnostic, toDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import { closest } from '../core/model/suggest.js';
import { Client } from './client.js';
import { commands } from './commands.js';
import { DEFAULT_SERVER } from './config.js';
import type { Context, Globals } from './context.js';
import { ExitError } from './exit.js';
import { renderHelp } from './help.js';
import { processIo, type Io } from './io.js';
import { record, redactArgs } from './journal.js';
import { printDiagnostics } from './output.js';
import { findCommand, parseLine } from './parse.js';
import { requestIds } from './request-id.js';
import { resolveGlobals } from './settings.js';

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
    if (mod.spec.raw) {
      // Its flags are its own: only what follows the command name.
      const r = await mod.run(undefined as unknown as Context, { positionals: argv.slice(index + 1), values: {} });
      return typeof r === 'number' ? r : 0;
    }
    const { values, positionals } = parseLine(name, mod.spec, rest);
    if (values.help) {
      io.stdout.write(renderHelp(name, entry.summary, mod.spec));
      return 0;
    }
    globals = await resolveGlobals(io, name, mod.spec, values);
    const nextId = requestIds(io.now(), globals.requestId);
    const ctx: Context = {
      io,
      globals,
      color: io.stdout.isTTY && !io.env.NO_COLOR && values['no-color'] !== true,
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

/** The boundary: whatever a command threw becomes coded diagnostics; a stray error is our bug (E0001). */
function asExitError(e: unknown, lastRequestId?: string): ExitError {
  if (e instanceof ExitError) return e;
  if (e instanceof CcaError) return new ExitError([e.diagnostic]);
  return new ExitError([toDiagnostic(e, 'the cca command line', lastRequestId)]);
}
