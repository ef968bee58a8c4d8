import type { CommandArgs } from '../context.js';
import { fail } from '../exit.js';

export const usage = 'cca agent [FLAGS…] (cca agent --help)';

/** `cca agent`: cli/agent.ts (owned by the agent's issue) parses its own flags and returns the exit code. */
export async function run(_ctx: unknown, { positionals }: CommandArgs): Promise<number> {
  let mod: typeof import('../agent.js');
  try {
    mod = await import('../agent.js');
  } catch (e) {
    // A module (or one of its dependencies) missing from this installation.
    fail('CCA-E0715', { command: 'agent', reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) });
  }
  return await mod.runAgent(positionals);
}
