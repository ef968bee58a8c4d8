import { processCommand } from '../process-command.js';

export const usage = 'cca migrate --store URL (cca migrate --help)';

/** `cca migrate`: apply the schema migrations alone (server/migrate.ts). */
export const run = processCommand('migrate', async () => (await import('../../server/dba-run.js')).runMigrate);
