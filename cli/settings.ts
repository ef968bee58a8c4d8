import { resolve } from 'node:path';
import { makeDiagnostic } from '../core/diagnostics/index.js';
import { configPath, DEFAULT_SERVER, endpointOf, readConfigFile, type ContextSource } from './config.js';
import type { Globals, OutputMode, Values } from './context.js';
import { ExitError } from './exit.js';
import { localSystem, type LocalSystem } from './local-system.js';
import type { Io } from './io.js';
import { outputsOf, type CommandSpec } from './spec.js';

const bad = (reason: string, usage: string) => new ExitError([makeDiagnostic('CCA-E0703', { command: 'cca', reason, usage })]);

/** The -o mode, when the command takes it. */
function outputMode(name: string, spec: CommandSpec, values: Values): OutputMode {
  const output = (values.output as string | undefined) ?? 'plain';
  const takes = outputsOf(spec);
  if (!(takes as readonly string[]).includes(output)) {
    throw new ExitError([makeDiagnostic('CCA-E0703', { command: `cca ${name}`, reason: `--output must be ${takes.join(', ')}, not "${output}"`, usage: `cca ${name} … -o ${takes.join('|')}` })]);
  }
  return output as OutputMode;
}

/**
 * Flags beat the environment, which beats the config file's context (--context, else
 * CCA_CONTEXT, else its current-context; else its top-level fields), which beats the local
 * system this checkout's `npm start` runs, which beats the default. The local system's admin
 * token is sent only to the local system's own server. Offline commands read none of it.
 */
export async function resolveGlobals(io: Io, name: string, spec: CommandSpec, values: Values): Promise<Globals> {
  const output = outputMode(name, spec, values);
  const requestId = values['request-id'];
  if (typeof requestId === 'string' && !/^[A-Za-z0-9._:-]{1,120}$/.test(requestId)) {
    throw bad(`--request-id must be 1 to 120 of A-Z a-z 0-9 . _ : -, not "${requestId}"`, 'cca COMMAND --request-id ID');
  }
  const flagContext = values.context as string | undefined;
  const chosen: { name: string; from: ContextSource } | undefined = flagContext
    ? { name: flagContext, from: '--context' }
    : io.env.CCA_CONTEXT
      ? { name: io.env.CCA_CONTEXT, from: 'CCA_CONTEXT' }
      : undefined;
  let file: Awaited<ReturnType<typeof endpointOf>> = {};
  let local: LocalSystem | undefined;
  if (!spec.offline) {
    const path = configPath(io.env, values.config as string | undefined, io.cwd);
    file = endpointOf(path, await readConfigFile(path), chosen);
    local = await localSystem(io.env, io.cwd);
  }
  const flagServer = values.server as string | undefined;
  const server = flagServer ?? io.env.CCA_SERVER ?? file.server ?? local?.server;
  const given = (values.token as string | undefined) ?? io.env.CCA_TOKEN ?? file.token;
  const token = given ?? (local && sameServer(server ?? DEFAULT_SERVER, local.server) ? await local.token() : undefined);
  // The config file's "ca" is already relative to that file; a flag's or CCA_CA's to the cwd.
  const givenCa = (values.ca as string | undefined) ?? (io.env.CCA_CA || undefined);
  const ca = givenCa !== undefined ? resolve(io.cwd, givenCa) : file.ca;
  const serverFrom = flagServer ? 'flag' : io.env.CCA_SERVER ? 'env' : file.server ? 'config' : local ? 'local' : 'default';
  if (server && !/^https?:\/\/[^/\s]+/.test(server)) {
    const where = { flag: '--server', env: 'CCA_SERVER', config: `the config file's "server"${file.context ? ` (context ${file.context})` : ''}`, local: `${local?.file}`, default: '' }[serverFrom];
    throw bad(`${where} must be an http:// or https:// URL, not "${server}"`, 'cca COMMAND --server http://HOST:PORT');
  }
  return {
    server: server || DEFAULT_SERVER,
    serverFrom,
    ...(token ? { token } : {}),
    ...(ca ? { ca } : {}),
    verbose: values.verbose === true,
    output,
    ...(typeof requestId === 'string' ? { requestId } : {}),
    ...(file.context ? { context: file.context } : {}),
  };
}

/** Whether two server URLs name the same origin (a trailing slash or path does not matter). */
function sameServer(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}
