import { USAGE as agentUsage } from '../../agent/options.js';
import { serverUsage } from '../../server/config.js';
import { migrateUsage, storeUsage } from '../../server/dba-run.js';

/** The usage text of each command that parses its own flags (`raw` in its spec). */
const RAW_USAGE: Record<string, string> = { server: serverUsage, agent: agentUsage, migrate: migrateUsage, store: storeUsage };

export function rawUsage(command: string): string {
  const usage = RAW_USAGE[command];
  if (usage === undefined) throw new Error(`cca ${command} parses its own flags: add its usage text to test/cli/raw-usage.ts`);
  return usage;
}
