import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { fail } from './exit.js';
import { messageOf } from '../core/diagnostics/index.js';

/** Where one cluster is: a server, and optionally a token and a CA file to trust. */
const endpointSchema = z.strictObject({
  server: z.string().min(1).optional(),
  token: z.string().min(1).optional(),
  /** The CA file to trust for an https:// server; a relative path is from the config file's folder. */
  ca: z.string().min(1).optional(),
});
export type Endpoint = z.output<typeof endpointSchema>;

/**
 * The config file: named contexts and the current one, or (the older format, still read)
 * one server, token and CA at the top level, used when no context is chosen.
 */
const fileSchema = endpointSchema.extend({
  contexts: z.record(z.string().regex(/^[A-Za-z0-9._-]{1,63}$/, 'a context name is 1 to 63 of A-Z a-z 0-9 . _ -'), endpointSchema).optional(),
  'current-context': z.string().min(1).optional(),
});
export type FileConfig = z.output<typeof fileSchema>;

export const DEFAULT_SERVER = 'http://127.0.0.1:7070';

/** `--config`, else $CCA_CONFIG, else $XDG_CONFIG_HOME/cca/config.json (~/.config/cca/config.json). */
export function configPath(env: Readonly<Record<string, string | undefined>>, flag?: string, cwd = '.'): string {
  const given = flag ?? env.CCA_CONFIG;
  if (given) return isAbsolute(given) ? given : resolve(cwd, given);
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'cca', 'config.json');
}

/**
 * The config file as written (empty when there is none). It may hold tokens, so it must
 * be readable by its owner only (0600, or stricter); anything else is refused rather than used.
 */
export async function readConfigFile(path: string): Promise<FileConfig> {
  let mode: number;
  try {
    mode = (await stat(path)).mode & 0o777;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    fail('CCA-E0705', { file: path, reason: messageOf(e) });
  }
  if ((mode & 0o077) !== 0) fail('CCA-E0706', { file: path, mode: `0${mode.toString(8)}` });
  return (await readJsonFile(path, fileSchema)) ?? {};
}

/** A JSON file checked against `schema`; undefined when it does not exist, else CCA-E0705 (unreadable) or CCA-E0707 (not what it should be). */
export async function readJsonFile<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    fail('CCA-E0705', { file: path, reason: messageOf(e) });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    fail('CCA-E0707', { file: path, reason: messageOf(e) });
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const at = issue.path.length > 0 ? `"${issue.path.join('.')}": ` : '';
    fail('CCA-E0707', { file: path, reason: `${at}${issue.message}` });
  }
  return r.data;
}

/** Where the context came from, for messages. */
export type ContextSource = '--context' | 'CCA_CONTEXT' | 'current-context';

/**
 * The server, token and CA the file gives: the chosen context's (--context, else
 * CCA_CONTEXT, else the file's current-context), else the top-level fields. A chosen
 * context the file does not hold is CCA-E0722. The CA path is made absolute.
 */
export function endpointOf(path: string, file: FileConfig, chosen: { name: string; from: ContextSource } | undefined): Endpoint & { context?: string } {
  const pick = chosen ?? (file['current-context'] ? { name: file['current-context'], from: 'current-context' as const } : undefined);
  let e: Endpoint = { ...(file.server ? { server: file.server } : {}), ...(file.token ? { token: file.token } : {}), ...(file.ca ? { ca: file.ca } : {}) };
  if (pick) {
    const found = file.contexts && Object.hasOwn(file.contexts, pick.name) ? file.contexts[pick.name] : undefined;
    if (!found) fail('CCA-E0722', { name: pick.name, from: pick.from, file: path, known: Object.keys(file.contexts ?? {}).join(', ') || 'none' });
    e = found;
  }
  return { ...e, ...(e.ca ? { ca: resolve(dirname(path), e.ca) } : {}), ...(pick ? { context: pick.name } : {}) };
}

/** Write the file whole, mode 0600, through a temporary file so a crash never leaves half of it. */
export async function writeConfigFile(path: string, config: FileConfig): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, path);
  } catch (e) {
    fail('CCA-E0723', { file: path, reason: messageOf(e) });
  }
}
