import { messageOf } from '../core/diagnostics/index.js';
import type { CommandArgs } from './context.js';
import { fail } from './exit.js';

/** A process's own entry point: it parses its own flags and returns the exit code. */
type Entry = (argv: string[]) => Promise<number>;

/**
 * `cca server` and `cca agent`: the command only loads the process's entry point
 * (server/run.ts, agent/run.ts) and hands it the arguments. Loaded lazily, so the other
 * commands never pull in the server's or the agent's dependencies.
 */
export function processCommand(command: string, load: () => Promise<Entry>) {
  return async function run(_ctx: unknown, { positionals }: CommandArgs): Promise<number> {
    let entry: Entry;
    try {
      entry = await load();
    } catch (e) {
      // A module (or one of its dependencies) missing from this installation.
      fail('CCA-E0715', { command, reason: messageOf(e).split('\n')[0]! });
    }
    return await entry(positionals);
  };
}
