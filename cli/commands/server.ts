import type { CommandArgs } from '../context.js';
import { fail } from '../exit.js';

export const usage = 'cca server [FLAGS…]';

/**
 * `cca server` lives in cli/server.ts (runServer(argv) → exit code), owned by the server's own issue.
 * The specifier is not a literal so this build typechecks before that module lands.
 */
export async function run(_ctx: unknown, { positionals }: CommandArgs): Promise<number> {
  const specifier = '../server.js';
  let mod: { runServer?: (argv: string[]) => Promise<number> };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch (e) {
    fail('CCA-E0715', { command: 'server', reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) });
  }
  if (typeof mod.runServer !== 'function') fail('CCA-E0715', { command: 'server', reason: 'cli/server.ts exports no runServer' });
  return await mod.runServer(positionals);
}
