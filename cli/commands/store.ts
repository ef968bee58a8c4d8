import { processCommand } from '../process-command.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca store snapshot --store URL FILE', 'cca store restore --store URL FILE [--overwrite]', 'cca store copy --from URL --to URL [--overwrite]'],
  description: 'Every key at one revision to a checked JSON-lines file, back into an empty store, or straight into another backend; leases are granted again with their TTL (docs/dba.md).',
  flags: {},
  raw: true,
  examples: [{ line: 'cca store copy --from sqlite:./trial.db --to postgres://cca@db/cca', says: 'move a first trial to production Postgres' }],
});

/** `cca store`: snapshot, restore and copy a whole store (server/store-transfer.ts). */
export const run = processCommand('store', async () => (await import('../../server/dba-run.js')).runStore);
