import type { Context } from 'hono';
import { CcaError, isCcaError, type Diagnostic, messageOf } from '../core/diagnostics/index.js';
import { statusFor } from './http-status.js';
import type { RequestIdEnv } from './request-id.js';

/**
 * The one place an error becomes a response: a coded diagnostic body, never a stack
 * trace. Anything that is not a CcaError is a bug, reported with the request ID.
 */
export function diagnosticFor(err: unknown, requestId: string): Diagnostic {
  const e = isCcaError(err)
    ? err
    : new CcaError('CCA-E0608', { reason: messageOf(err), requestId });
  return { ...e.diagnostic, requestId };
}

/** An error that carries several diagnostics (e.g. every problem in an applied file). */
function allDiagnostics(err: unknown, requestId: string): Diagnostic[] | undefined {
  if (!(err instanceof CcaError) || !('all' in err) || !Array.isArray(err.all)) return undefined;
  return (err.all as Diagnostic[]).map((d) => ({ ...d, requestId }));
}

export function errorResponse(err: unknown, c: Context): Response {
  const requestId = (c.var as Partial<RequestIdEnv['Variables']>).requestId ?? 'unknown';
  const d = diagnosticFor(err, requestId);
  // The access log (handlers/access-log.ts) names the code, and logs a bug with its stack.
  c.set('failure', { diagnostic: d, error: err });
  const all = allDiagnostics(err, requestId);
  // A refusal that says when to come back (429: too many streams, a node writing too fast).
  const after = d.params.retryAfterSeconds;
  if (typeof after === 'number' && Number.isFinite(after) && after >= 0) c.header('Retry-After', String(Math.ceil(after)));
  return c.json(all ? { error: d, diagnostics: all } : { error: d }, statusFor(d));
}
