/** `npm run server -- [flags]`: one server pod (the same as `cca server`). */
import { runServer } from './run.js';

process.exit(await runServer(process.argv.slice(2)));
