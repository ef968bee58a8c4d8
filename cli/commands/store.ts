import { processCommand } from '../process-command.js';

export const usage = 'cca store snapshot|restore|copy … (cca store --help)';

/** `cca store`: snapshot, restore and copy a whole store (server/store-transfer.ts). */
export const run = processCommand('store', async () => (await import('../../server/dba-run.js')).runStore);
