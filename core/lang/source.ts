import { makeDiagnostic } from '../diagnostics/error.js';
import type { Params } from '../diagnostics/error.js';
import type { DiagnosticCode } from '../diagnostics/registry.js';
import type { Diagnostic } from '../diagnostics/types.js';

/** Half-open range of UTF-16 offsets into the source text. */
export interface Span {
  start: number;
  end: number;
}

/** Offset → line/column (1-based, UTF-16 columns) by binary search over line starts. */
export class LineIndex {
  private readonly starts: number[] = [0];

  constructor(text: string) {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.starts.push(i + 1);
  }

  position(offset: number): { line: number; col: number } {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: offset - this.starts[lo]! + 1 };
  }

  line(offset: number): number {
    return this.position(offset).line;
  }
}

/** Collects coded diagnostics for one file, with a cap so a garbage file cannot flood anyone. */
export class DiagnosticSink {
  readonly list: Diagnostic[] = [];
  /** Set once the cap is hit; the parser stops at the next item boundary. */
  full = false;

  constructor(
    readonly file: string,
    readonly lines: LineIndex,
    readonly max = 50,
  ) {}

  add(code: DiagnosticCode, params: Params, span: Span): void {
    if (this.full) return;
    if (this.list.length >= this.max) {
      this.full = true;
      this.list.push(this.make('CCA-E0220', { max: this.max }, span));
      return;
    }
    this.list.push(this.make(code, params, span));
  }

  make(code: DiagnosticCode, params: Params, span: Span): Diagnostic {
    const d = makeDiagnostic(code, params);
    const a = this.lines.position(span.start);
    const b = this.lines.position(Math.max(span.start, span.end));
    d.span = { file: this.file, line: a.line, col: a.col, endLine: b.line, endCol: b.col };
    return d;
  }
}
