import { processCommand } from '../process-command.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca server [FLAGS…]'],
  description: 'One API server pod with its controller workers; its flags are its own.',
  flags: {},
  raw: true,
  examples: [{ line: 'cca server --store postgres://cca@db/cca --secret-key-file keys', says: 'one pod on a Postgres' }],
});

/** `cca server`: one server pod (server/run.ts). */
export const run = processCommand('server', async () => (await import('../../server/run.js')).runServer);
