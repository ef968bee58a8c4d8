import { stringify } from 'yaml';
import { render, toJson, type Diagnostic } from '../core/diagnostics/index.js';
import type { Globals } from './context.js';
import type { Io } from './io.js';

/** -o json and -o yaml: the same data, printed whole instead of as text. */
export function structured(globals: Pick<Globals, 'output'>): boolean {
  return globals.output === 'json' || globals.output === 'yaml';
}

/** One value as -o asks: indented JSON, or a YAML document. */
export function formatData(output: Globals['output'], value: unknown): string {
  return output === 'yaml' ? stringify(value, { lineWidth: 0 }) : `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Diagnostics to stderr. Plain: what and where, the caret, the fix and the request ID;
 * --verbose: cause, fix, context, request ID; --output json (or yaml): `{ error, diagnostics }`,
 * the API's error body shape with each diagnostic as `toJson` gives it.
 */
export function printDiagnostics(io: Io, globals: Pick<Globals, 'verbose' | 'output'>, ds: readonly Diagnostic[], sources: ReadonlyMap<string, string> = new Map()): void {
  if (ds.length === 0) return;
  if (structured(globals)) {
    const body = { error: toJson(ds[0]!), diagnostics: ds.map(toJson) };
    io.stderr.write(globals.output === 'yaml' ? stringify(body, { lineWidth: 0 }) : `${JSON.stringify(body)}\n`);
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

/** A command's result as -o json or -o yaml asks. */
export function printData(ctx: { io: Io; globals: Pick<Globals, 'output'> }, value: unknown): void {
  ctx.io.stdout.write(formatData(ctx.globals.output, value));
}
