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
      e instanceof Error ? `${e.name}: ${firstLine(e.message, 200)}` : `a non-error value was thrown (${typeof e})`;
    d = makeDiagnostic('CCA-E0001', { where, reason });
  }
  if (requestId !== undefined) d.requestId = requestId;
  return d;
}

/** The text up to its first line break, at most `maxChars` of it: a message without its stack. */
export function firstLine(s: string, maxChars = Infinity): string {
  const nl = s.indexOf('\n');
  const line = nl < 0 ? s : s.slice(0, nl);
  return line.length > maxChars ? line.slice(0, maxChars) : line;
}

/** The message of whatever was thrown: an Error's own, anything else as a string. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
