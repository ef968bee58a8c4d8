import { exitCodeFor, renderPlain, toDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import { redactUrl } from '../core/redact.js';
import { loadKeyring } from '../handlers/secret-box.js';
import { limitsOf, serverConfig, serverUsage } from './config.js';
import { startServer } from './start.js';
import { version } from './version.js';

/** `cca server` and `npm run server`: one server pod, until SIGINT or SIGTERM. Returns the exit code. */
export async function runServer(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(serverUsage);
    return 0;
  }
  const report = (d: Diagnostic) => console.error(renderPlain(d));
  try {
    const flags = serverConfig(argv, process.env);
    const { secretKey, secretKeyFile, drainSeconds, maxStreams, maxNodeStreams, nodeWriteRate, nodeWriteBurst, ...rest } = flags;
    const limits = limitsOf({ maxStreams, maxNodeStreams, nodeWriteRate, nodeWriteBurst });
    const secretKeys = loadKeyring({ key: secretKey, file: secretKeyFile });
    if (!secretKeys) console.error('no secret key (CCA_SECRET_KEY or --secret-key-file): specs with secrets will be refused rather than stored in the clear');
    const server = await startServer({ ...rest, limits, ...(secretKeys ? { secretKeys } : {}), drainDelayMs: drainSeconds * 1000, version, onDiagnostic: report, onRecovered: () => console.error('the store answers again') });
    console.log(`ccattler server ${version} listening on ${server.url} (store ${redactUrl(flags.store)})`);
    if (server.tokens.admin) console.log(`admin token (shown once, stored hashed): ${server.tokens.admin}`);
    if (server.tokens.join) console.log(`join token for agents (shown once):      ${server.tokens.join}`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    console.log('stopping…');
    // Drain, grace for requests in flight, then the store and workers: bounded, whatever hangs.
    const boundMs = drainSeconds * 1000 + 10_000 + 10_000;
    const stopped = await Promise.race([server.stop().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), boundMs).unref())]);
    if (!stopped) console.error(`not stopped cleanly within ${boundMs / 1000} s: exiting anyway`);
    return 0;
  } catch (e) {
    const d = toDiagnostic(e, 'cca server');
    report(d);
    return exitCodeFor([d]);
  }
}

