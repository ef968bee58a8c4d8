import type { Diagnostic } from './types.js';

type Span = NonNullable<Diagnostic['span']>;

/** The line of `text` numbered `line` (1-based), without its line break; undefined past the end. */
export function sourceLine(text: string, line: number): string | undefined {
  let start = 0;
  for (let n = 1; n < line; n++) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) return undefined;
    start = nl + 1;
  }
  const end = text.indexOf('\n', start);
  return text.slice(start, end < 0 ? text.length : end).replace(/\r$/, '');
}

/**
 * The source line with a caret run under the span, rustc style. Tabs before the span are
 * kept as tabs in the caret line so the caret lines up whatever the terminal's tab width.
 */
export function renderSnippet(text: string, span: Span): string | undefined {
  const src = sourceLine(text, span.line);
  if (src === undefined) return undefined;
  const gutter = String(span.line);
  const pad = ' '.repeat(gutter.length);
  const startCol = Math.max(1, Math.min(span.col, src.length + 1));
  const sameLine = span.endLine === undefined || span.endLine === span.line;
  const endCol = sameLine && span.endCol !== undefined ? span.endCol : src.length + 1;
  const width = Math.max(1, Math.min(endCol, src.length + 1) - startCol);
  const lead = src.slice(0, startCol - 1).replace(/[^\t]/g, ' ');
  return `${pad} |\n${gutter} | ${src}\n${pad} | ${lead}${'^'.repeat(width)}`;
}
