import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fail } from './exit.js';
import { messageOf } from '../core/diagnostics/index.js';

export interface FileConfig {
  server?: string;
  token?: string;
  /** The CA file to trust for an https:// server; a relative path is from the config file's folder. */
  ca?: string;
}

const FIELDS = ['server', 'token', 'ca'] as const;

export const DEFAULT_SERVER = 'http://127.0.0.1:7070';

/** `--config`, else $CCA_CONFIG, else $XDG_CONFIG_HOME/cca/config.json (~/.config/cca/config.json). */
export function configPath(env: Readonly<Record<string, string | undefined>>, flag?: string, cwd = '.'): string {
  const given = flag ?? env.CCA_CONFIG;
  if (given) return isAbsolute(given) ? given : resolve(cwd, given);
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'cca', 'config.json');
}

/**
 * The config file, when there is one. It may hold a token, so it must be readable by
 * its owner only (0600, or stricter); anything else is refused rather than used.
 */
export async function readConfig(path: string): Promise<FileConfig> {
  let mode: number;
  try {
    mode = (await stat(path)).mode & 0o777;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    fail('CCA-E0705', { file: path, reason: messageOf(e) });
  }
  if ((mode & 0o077) !== 0) fail('CCA-E0706', { file: path, mode: `0${mode.toString(8)}` });
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (e) {
    fail('CCA-E0707', { file: path, reason: messageOf(e) });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('CCA-E0707', { file: path, reason: 'it is not a JSON object' });
  const out: FileConfig = {};
  for (const [k, v] of Object.entries(raw)) {
    const field = FIELDS.find((f) => f === k);
    if (!field) fail('CCA-E0707', { file: path, reason: `unknown field "${k}" (known: ${FIELDS.join(', ')})` });
    if (typeof v !== 'string' || v === '') fail('CCA-E0707', { file: path, reason: `"${k}" must be a non-empty string` });
    out[field] = field === 'ca' ? resolve(dirname(path), v) : v;
  }
  return out;
}
