import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { messageOf } from '../core/diagnostics/index.js';
import { packageRoot } from '../core/package-root.js';
import { readJsonFile } from './config.js';
import { fail } from './exit.js';

/**
 * The system `npm start` runs from this checkout: it records its server's URL in
 * `.ccattler/local.json` on every start and keeps the admin token in `.ccattler/tokens.json`
 * (0600), so `npx cca` in the checkout needs no `export CCA_SERVER=… CCA_TOKEN=…`.
 * `CCA_HOME` moves the folder, as it does for `npm start`.
 */
const localSchema = z.object({ server: z.string().regex(/^https?:\/\/[^/\s]+/) });
const tokensSchema = z.object({ admin: z.string().min(1) });

export interface LocalSystem {
  server: string;
  /** The admin token, read only when the command's server is this one. */
  token(): Promise<string>;
  /** The file the server came from, for messages. */
  file: string;
}

function localHome(env: Readonly<Record<string, string | undefined>>, cwd: string): string {
  return env.CCA_HOME ? resolve(cwd, env.CCA_HOME) : join(fileURLToPath(packageRoot(import.meta.url, 1)), '.ccattler');
}

/** The local system this checkout (or CCA_HOME) started, when it ever started one. */
export async function localSystem(env: Readonly<Record<string, string | undefined>>, cwd: string): Promise<LocalSystem | undefined> {
  const home = localHome(env, cwd);
  const file = join(home, 'local.json');
  const local = await readJsonFile(file, localSchema);
  if (!local) return undefined;
  // It decides where the admin token goes: only its owner (us) may be able to change it.
  const st = await stat(file);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) fail('CCA-E0724', { file, problem: `is owned by uid ${st.uid}, not by you (uid ${uid})` });
  if ((st.mode & 0o022) !== 0) fail('CCA-E0724', { file, problem: `has mode 0${(st.mode & 0o777).toString(8)}: others can change it` });
  const tokensFile = join(home, 'tokens.json');
  return {
    server: local.server,
    file,
    token: async () => {
      // The same rule as the config file: a token others can read is refused, not used.
      let mode: number;
      try {
        mode = (await stat(tokensFile)).mode & 0o777;
      } catch (e) {
        fail('CCA-E0705', { file: tokensFile, reason: messageOf(e) });
      }
      if ((mode & 0o077) !== 0) fail('CCA-E0706', { file: tokensFile, mode: `0${mode.toString(8)}` });
      const tokens = await readJsonFile(tokensFile, tokensSchema);
      if (!tokens) fail('CCA-E0705', { file: tokensFile, reason: 'it is gone' });
      return tokens.admin;
    },
  };
}
