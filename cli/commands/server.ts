import { processCommand } from '../process-command.js';

export const usage = 'cca server [FLAGS…] (cca server --help)';

/** `cca server`: one server pod (server/run.ts). */
export const run = processCommand('server', async () => (await import('../../server/run.js')).runServer);
