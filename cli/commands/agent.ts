import type { CommandArgs } from '../context.js';
import { fail } from '../exit.js';

export const usage = 'cca agent [FLAGS…]';

/**
 * `cca agent` lives in cli/agent.ts (runAgent(argv) → exit code), owned by the agent's own issue.
 * The specifier is not a literal so this build typechecks before that module lands.
 */
export async function run(_ctx: unknown, { positionals }: CommandArgs): Promise<number> {
  const specifier = '../agent.js';
  let mod: { runAgent?: (argv: string[]) => Promise<number> };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch (e) {
    fail('CCA-E0715', { command: 'agent', reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) });
  }
  if (typeof mod.runAgent !== 'function') fail('CCA-E0715', { command: 'agent', reason: 'cli/agent.ts exports no runAgent' });
  return await mod.runAgent(positionals);
}
