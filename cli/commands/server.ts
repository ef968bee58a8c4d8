import type { CommandArgs } from '../context.js';
import { fail } from '../exit.js';

export const usage = 'cca server [FLAGS…] (cca server --help)';

/** `cca server`: cli/server.ts (owned by the server's issue) parses its own flags and returns the exit code. */
export async function run(_ctx: unknown, { positionals }: CommandArgs): Promise<number> {
  let mod: typeof import('../server.js');
  try {
    mod = await import('../server.js');
  } catch (e) {
    // A module (or one of its dependencies) missing from this installation.
    fail('CCA-E0715', { command: 'server', reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) });
  }
  return await mod.runServer(positionals);
}
