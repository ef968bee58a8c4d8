import { hostname } from 'node:os';
import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Diagnostic } from '../core/diagnostics/index.js';
import type { LogSettings } from '../core/log-settings.js';

export type { Logger } from 'pino';

/**
 * Paths pino blanks whatever a caller passes: the API never logs a header, a token or a
 * secret value on purpose (docs/observability.md), and this catches one passed by mistake.
 */
export const REDACT = ['authorization', 'token', 'secret', 'password', '*.authorization', '*.token', '*.secret', '*.password', 'headers.*', '*.headers.*'];

/**
 * The process's logger: JSON lines on stdout (pino's fields `time`, `level`, `msg`, plus the
 * `base` ones on every line: `pod` for a server, `node` for an agent), or pino-pretty's
 * human lines for a terminal. Written synchronously, so the last lines before an exit are kept.
 * `to`: another destination (tests).
 */
export function createLogger(settings: LogSettings, base: Record<string, string>, to?: DestinationStream): Logger {
  const dest = to ?? (settings.format === 'pretty' ? pretty({ colorize: process.stdout.isTTY === true, sync: true, destination: 1 }) : pino.destination({ dest: 1, sync: true }));
  return pino(
    {
      level: settings.level,
      base,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    dest,
  );
}

/** A logger that writes nothing (library use and tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** This pod's name in its log lines: CCA_POD (a Kubernetes pod name, say), else host:pid. */
export function podName(env: NodeJS.ProcessEnv): string {
  return env.CCA_POD || `${hostname()}:${process.pid}`;
}

/** A diagnostic as a log line: its code, blame and fix as fields, the sentence as the message. */
export function logDiagnostic(log: Logger, d: Diagnostic): void {
  const level = d.blame === 'bug' ? 'error' : 'warn';
  log[level]({ code: d.code, blame: d.blame, fix: d.fix }, `${d.code} ${d.message}`);
}
