import { CcaError, makeDiagnostic } from './error.js';
import type { Diagnostic } from './types.js';

/**
 * Turn whatever was thrown into a diagnostic at a boundary. A CcaError keeps its own; anything
 * else is our bug (CCA-E0001) and carries only the error's name and message: a stack trace
 * never reaches a user.
 */
export function toDiagnostic(e: unknown, where: string, requestId?: string): Diagnostic {
  let d: Diagnostic;
  if (e instanceof CcaError) {
    d = { ...e.diagnostic };
  } else {
    const reason =
      e instanceof Error ? `${e.name}: ${firstLine(e.message)}` : `a non-error value was thrown (${typeof e})`;
    d = makeDiagnostic('CCA-E0001', { where, reason });
  }
  if (requestId !== undefined) d.requestId = requestId;
  return d;
}

function firstLine(s: string): string {
  const nl = s.indexOf('\n');
  return (nl < 0 ? s : s.slice(0, nl)).slice(0, 200);
}

/** The message of whatever was thrown: an Error's own, anything else as a string. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
