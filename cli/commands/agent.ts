import { processCommand } from '../process-command.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca agent [FLAGS…]'],
  description: 'The node agent of one machine; its flags are its own.',
  flags: {},
  raw: true,
  examples: [{ line: 'cca agent --server https://cca.example:7070 --ca ca.pem --node n1 --token-file JOIN --runtime containerd', says: 'join a machine' }],
});

/** `cca agent`: the node agent (agent/run.ts). */
export const run = processCommand('agent', async () => (await import('../../agent/run.js')).runAgent);
