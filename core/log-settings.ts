import { z } from 'zod';
import { CcaError } from './diagnostics/index.js';

/** pino's levels, most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LogSettings {
  level: LogLevel;
  format: LogFormat;
}

const level = z.enum(LOG_LEVELS);
const format = z.enum(LOG_FORMATS);

/**
 * `--log-level` / `--log-format` of `cca server` and `cca agent`: a flag wins over
 * CCA_LOG_LEVEL / CCA_LOG_FORMAT; the level defaults to info, the format to pretty on a
 * terminal and JSON otherwise (`tty`: whether stdout is one).
 */
export function logSettings(given: { level?: string | undefined; format?: string | undefined }, tty: boolean): LogSettings {
  const l = level.safeParse(given.level ?? 'info');
  if (!l.success) throw new CcaError('CCA-E0730', { setting: '--log-level', value: JSON.stringify(given.level), allowed: LOG_LEVELS.join(', ') });
  const f = format.safeParse(given.format ?? (tty ? 'pretty' : 'json'));
  if (!f.success) throw new CcaError('CCA-E0730', { setting: '--log-format', value: JSON.stringify(given.format), allowed: LOG_FORMATS.join(', ') });
  return { level: l.data, format: f.data };
}
