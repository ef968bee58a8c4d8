import type { Context } from 'hono';
import { CcaError, isCcaError, type Diagnostic } from '../core/diagnostics/index.js';
import { statusFor } from './http-status.js';
import type { RequestIdEnv } from './request-id.js';

/**
 * The one place an error becomes a response: a coded diagnostic body, never a stack
 * trace. Anything that is not a CcaError is a bug, reported with the request ID.
 */
export function diagnosticFor(err: unknown, requestId: string): Diagnostic {
  const e = isCcaError(err)
    ? err
    : new CcaError('CCA-E0608', { reason: err instanceof Error ? err.message : String(err), requestId });
  return { ...e.diagnostic, requestId };
}

export function errorResponse(err: unknown, c: Context<RequestIdEnv>): Response {
  const d = diagnosticFor(err, c.get('requestId') ?? 'unknown');
  if (d.blame === 'bug') console.error(`[${d.requestId}] ${d.code} ${d.message}`, err);
  return c.json({ error: d }, statusFor(d));
}
