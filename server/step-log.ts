import { firstLine } from '../core/diagnostics/index.js';
import type { StepInfo, StepMetrics } from '../jobs/step-runner.js';
import type { ServerMetrics } from '../handlers/metrics.js';
import type { Logger } from './log.js';

/** A step failed because the store is down: the pod reports the outage once (a diagnostic), not once per step. */
const STORE_DOWN = 'CCA-E0403';

/**
 * What a driver reports of each step, counted (handlers/metrics.ts) and logged: a step that
 * committed writes or failed at info, a converged one (no writes), one the store's outage
 * failed, and fan-outs at debug.
 * The drivers and steps themselves log nothing: they return results and this shell logs them.
 */
export function stepLog(metrics: ServerMetrics, log: Logger): StepMetrics {
  const steps = log.child({ component: 'controller' });
  return {
    step(info: StepInfo) {
      metrics.step(info);
      const fields = {
        controller: info.controller,
        ...(info.subject !== undefined ? { subject: info.subject } : {}),
        outcome: info.ok ? 'ok' : 'error',
        writes: info.writes ?? 0,
        durationMs: Math.round(info.ms * 10) / 10,
        ...(info.code ? { code: info.code } : {}),
      };
      if (info.code === STORE_DOWN) steps.debug(fields, 'step');
      else if (!info.ok || (info.writes ?? 0) > 0) steps.info(fields, 'step');
      else steps.debug(fields, 'step');
    },
    fanout(info) {
      steps.debug({ controller: info.controller, subjects: info.subjects }, 'fan-out');
    },
    deferred(info) {
      metrics.stepDeferrals.inc({ controller: info.controller });
      steps.debug({ controller: info.controller, ...(info.subject !== undefined ? { subject: info.subject } : {}) }, 'step put off: it runs on another worker');
    },
  };
}

/** graphile-worker's levels onto pino's: its per-job "completed" lines are info there, debug here. */
const LEVELS: Record<string, 'error' | 'warn' | 'debug' | 'trace'> = { error: 'error', warning: 'warn', info: 'debug', debug: 'trace' };

/**
 * graphile-worker's own log lines (jobs/graphile-driver.ts `log`), through the pod's logger.
 * Only a message's first line: it appends a failed task's stack trace, while the failure
 * itself is already the step's coded diagnostic (jobs/step-runner.ts).
 */
export function graphileLog(log: Logger): (level: string, message: string, fields: Record<string, unknown>) => void {
  return (level, message, fields) => log[LEVELS[level] ?? 'info'](fields, firstLine(message));
}
