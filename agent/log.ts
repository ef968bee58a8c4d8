import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogSettings } from '../core/log-settings.js';

export type { Logger } from 'pino';

/** Whatever a caller passes by mistake under these names is blanked (docs/observability.md). */
const REDACT = ['authorization', 'token', 'secret', 'password', '*.authorization', '*.token', '*.secret', '*.password', 'headers.*', '*.headers.*'];

/**
 * The agent's logger: JSON lines with `time`, `level`, `node`, `msg` (pino), or pino-pretty's
 * human lines for a terminal; on stderr, where the agent's lines have always gone. Written
 * synchronously, so the last lines before an exit are kept. `to`: another destination (tests).
 */
export function createAgentLogger(settings: LogSettings, node: string, to?: DestinationStream): Logger {
  const dest = to ?? (settings.format === 'pretty' ? pretty({ colorize: process.stderr.isTTY === true, sync: true, destination: 2 }) : pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: settings.level,
      base: { node },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    dest,
  );
}
