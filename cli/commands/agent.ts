import { processCommand } from '../process-command.js';

export const usage = 'cca agent [FLAGS…] (cca agent --help)';

/** `cca agent`: the node agent (agent/run.ts). */
export const run = processCommand('agent', async () => (await import('../../agent/run.js')).runAgent);
