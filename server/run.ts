import { exitCodeFor, renderPlain, toDiagnostic } from '../core/diagnostics/index.js';
import { logSettings } from '../core/log-settings.js';
import { redactUrl } from '../core/redact.js';
import { loadKeyring } from '../handlers/secret-box.js';
import { limitsOf, serverConfig, serverUsage } from './config.js';
import { createLogger, logDiagnostic, podName } from './log.js';
import { guardServerProcess } from './rejections.js';
import { startServer } from './start.js';
import { version } from './version.js';

/**
 * `cca server` and `npm run server`: one server pod, until SIGINT or SIGTERM. Returns the exit code.
 * What it does is logged (server/log.ts); a start that fails is told to the user as a plain
 * diagnostic on stderr, and the bootstrap tokens of a first start are printed there once,
 * never logged.
 */
export async function runServer(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(serverUsage);
    return 0;
  }
  try {
    const flags = serverConfig(argv, process.env);
    const { secretKey, secretKeyFile, drainSeconds, logLevel, logFormat, maxStreams, maxNodeStreams, nodeWriteRate, nodeWriteBurst, ...rest } = flags;
    const limits = limitsOf({ maxStreams, maxNodeStreams, nodeWriteRate, nodeWriteBurst });
    const log = createLogger(logSettings({ level: logLevel, format: logFormat }, process.stdout.isTTY === true), { pod: podName(process.env) });
    const secretKeys = loadKeyring({ key: secretKey, file: secretKeyFile });
    if (!secretKeys) log.warn('no secret key (CCA_SECRET_KEY or --secret-key-file): specs with secrets will be refused rather than stored in the clear');
    // Installed before the pod starts: a rejection during the start is told like any other.
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    let wake = () => undefined as void;
    const stopAsked = new Promise<void>((resolve) => {
      wake = resolve;
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    const guard = guardServerProcess(() => server, log, () => wake());
    server = await startServer({
      ...rest,
      limits,
      ...(secretKeys ? { secretKeys } : {}),
      drainDelayMs: drainSeconds * 1000,
      version,
      log,
      onDiagnostic: (d) => logDiagnostic(log, d),
      onRecovered: () => log.info('the store answers again'),
    });
    const store = redactUrl(flags.store);
    log.info({ url: server.url, store, version }, `ccattler server ${version} listening on ${server.url} (store ${store})`);
    if (server.tokens.admin) console.error(`admin token (shown once, stored hashed): ${server.tokens.admin}`);
    if (server.tokens.join) console.error(`join token for agents (shown once):      ${server.tokens.join}`);
    await stopAsked;
    log.info('stopping…');
    // Drain, grace for requests in flight, then the store and workers: bounded, whatever hangs.
    const boundMs = drainSeconds * 1000 + 10_000 + 10_000;
    const stopped = await Promise.race([server.stop().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), boundMs).unref())]);
    if (!stopped) log.error(`not stopped cleanly within ${boundMs / 1000} s: exiting anyway`);
    else log.info('stopped');
    guard.remove();
    const fatal = guard.fatal();
    return fatal ? exitCodeFor([fatal]) : 0;
  } catch (e) {
    const d = toDiagnostic(e, 'cca server');
    console.error(renderPlain(d));
    return exitCodeFor([d]);
  }
}
