import { exitCodeFor, makeDiagnostic, type Diagnostic, type DiagnosticCode, type Params } from '../core/diagnostics/index.js';

/**
 * What a command throws to stop: the diagnostics to print and the exit code their first
 * one's blame decides. Only the entry point (bin/cca.mjs) turns the code into process.exit.
 */
export class ExitError extends Error {
  readonly code: number;

  constructor(
    readonly diagnostics: Diagnostic[],
    /** Source texts by file name, so diagnostics with spans show the line and caret. */
    readonly sources: ReadonlyMap<string, string> = new Map(),
  ) {
    super(diagnostics[0] ? `${diagnostics[0].code} ${diagnostics[0].message}` : 'exit');
    this.name = 'ExitError';
    this.code = exitCodeFor(diagnostics);
  }
}

/** Stop the command with one coded diagnostic. */
export function fail(code: DiagnosticCode, params: Params = {}, requestId?: string): never {
  const d = makeDiagnostic(code, params);
  if (requestId !== undefined) d.requestId = requestId;
  throw new ExitError([d]);
}
