import { render, toJson, type Diagnostic } from '../core/diagnostics/index.js';
import type { Globals } from './context.js';
import type { Io } from './io.js';

/**
 * Diagnostics to stderr. Plain: what and where, the caret, the fix and the request ID;
 * --verbose: cause, fix, context, request ID; --output json: `{ error, diagnostics }`,
 * the API's error body shape with each diagnostic as `toJson` gives it.
 */
export function printDiagnostics(io: Io, globals: Pick<Globals, 'verbose' | 'output'>, ds: readonly Diagnostic[], sources: ReadonlyMap<string, string> = new Map()): void {
  if (ds.length === 0) return;
  if (globals.output === 'json') {
    io.stderr.write(`${JSON.stringify({ error: toJson(ds[0]!), diagnostics: ds.map(toJson) })}\n`);
    return;
  }
  const mode = globals.verbose ? 'verbose' : 'plain';
  const blocks = ds.map((d) => {
    const text = render(d, mode, { sources });
    return mode === 'plain' && d.requestId ? `${text}\n  request: ${d.requestId}` : text;
  });
  io.stderr.write(`${blocks.join('\n\n')}\n`);
  if (ds.length > 1 && mode === 'plain') io.stderr.write(`${ds.length} problems\n`);
}

export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
