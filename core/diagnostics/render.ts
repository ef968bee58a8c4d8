import { renderSnippet } from './snippet.js';
import { exitCodeForBlame } from './types.js';
import type { Diagnostic } from './types.js';

export type RenderMode = 'plain' | 'verbose' | 'json';

export interface RenderOptions {
  /** Source texts by file name, so a diagnostic with a span can show its line and caret. */
  sources?: ReadonlyMap<string, string>;
}

/** The stable JSON shape of `--output json` and API error bodies. Key order is part of the contract. */
export interface DiagnosticJson {
  code: string;
  blame: Diagnostic['blame'];
  exitCode: number;
  title: string;
  message: string;
  fix: string;
  params: Record<string, string | number | boolean>;
  span?: Diagnostic['span'];
  requestId?: string;
}

function location(d: Diagnostic): string {
  return d.span ? `${d.span.file}:${d.span.line}:${d.span.col}: ` : '';
}

function snippetFor(d: Diagnostic, opts: RenderOptions): string | undefined {
  if (!d.span) return undefined;
  const text = opts.sources?.get(d.span.file);
  return text === undefined ? undefined : renderSnippet(text, d.span);
}

/** One line saying what is wrong and where, the source line when known, then one line saying what to do. */
export function renderPlain(d: Diagnostic, opts: RenderOptions = {}): string {
  const lines = [`error ${d.code}: ${location(d)}${d.message}`];
  const snippet = snippetFor(d, opts);
  if (snippet) lines.push(snippet);
  lines.push(`  fix: ${d.fix}`);
  return lines.join('\n');
}

function sortedParams(params: Diagnostic['params']): [string, string | number | boolean][] {
  return Object.keys(params)
    .sort()
    .map((k) => [k, params[k] as string | number | boolean]);
}

/** Everything an operator needs to act or to report: cause, fix, context and the request ID. */
export function renderVerbose(d: Diagnostic, opts: RenderOptions = {}): string {
  const lines = [`error ${d.code} ${d.title} (blame: ${d.blame}, exit ${exitCodeForBlame[d.blame]})`];
  if (d.span) {
    const end = d.span.endLine !== undefined ? ` to ${d.span.endLine}:${d.span.endCol ?? '?'}` : '';
    lines.push(`  at:      ${d.span.file}:${d.span.line}:${d.span.col}${end}`);
  }
  const snippet = snippetFor(d, opts);
  if (snippet) lines.push(snippet.replace(/^/gm, '  '));
  lines.push(`  cause:   ${d.message}`);
  lines.push(`  fix:     ${d.fix}`);
  const ctx = sortedParams(d.params).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  lines.push(`  context: ${ctx.length > 0 ? ctx.join(' ') : '(none)'}`);
  lines.push(`  request: ${d.requestId ?? '(none)'}`);
  lines.push(`  explain: cca explain ${d.code}`);
  return lines.join('\n');
}

export function toJson(d: Diagnostic): DiagnosticJson {
  const out: DiagnosticJson = {
    code: d.code,
    blame: d.blame,
    exitCode: exitCodeForBlame[d.blame],
    title: d.title,
    message: d.message,
    fix: d.fix,
    params: Object.fromEntries(sortedParams(d.params)),
  };
  if (d.span) {
    const { file, line, col, endLine, endCol } = d.span;
    out.span = endLine === undefined ? { file, line, col } : { file, line, col, endLine, endCol };
  }
  if (d.requestId !== undefined) out.requestId = d.requestId;
  return out;
}

export function renderJson(d: Diagnostic): string {
  return JSON.stringify(toJson(d));
}

export function render(d: Diagnostic, mode: RenderMode, opts: RenderOptions = {}): string {
  if (mode === 'json') return renderJson(d);
  return mode === 'verbose' ? renderVerbose(d, opts) : renderPlain(d, opts);
}

/** Several diagnostics: blank-line separated for people, one JSON array for machines. */
export function renderAll(ds: readonly Diagnostic[], mode: RenderMode, opts: RenderOptions = {}): string {
  if (mode === 'json') return JSON.stringify(ds.map(toJson));
  return ds.map((d) => render(d, mode, opts)).join('\n\n');
}

/** The CLI's exit code for a list of diagnostics: the blame of the first one decides, 0 for none. */
export function exitCodeFor(ds: readonly Diagnostic[]): number {
  const first = ds[0];
  return first ? exitCodeForBlame[first.blame] : 0;
}
