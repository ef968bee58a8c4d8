/** `npx tsx agent/main.ts --server URL --node NAME --token … --runtime fake|process|containerd --state-dir DIR` */
import { runAgent } from './run.js';

process.exitCode = await runAgent(process.argv.slice(2));
