import type { Span } from './source.js';

/** One `digits[.digits]unit` piece of a number; `1m30s` has two. */
export interface Segment {
  int: string;
  frac: string;
  unit: string;
}

export type Token =
  | { kind: 'ident'; text: string; span: Span; nl: boolean }
  | { kind: 'string'; value: string; triple: boolean; span: Span; nl: boolean }
  | { kind: 'number'; text: string; negative: boolean; segments: Segment[]; valid: boolean; span: Span; nl: boolean }
  | { kind: 'punct'; text: Punct; span: Span; nl: boolean }
  | { kind: 'eof'; span: Span; nl: boolean };

export type Punct = '{' | '}' | '[' | ']' | '=' | '==' | '!=' | ',' | '.' | ':';

export interface Comment {
  /** The full comment text including its markers (hash, double slash, or slash-star). */
  text: string;
  span: Span;
  line: number;
  /** Was there a blank line between the previous token or comment and this one? */
  blankBefore: boolean;
  /** Is this comment the first thing on its line? (else it trails code) */
  ownLine: boolean;
}

/** How a token reads in "expected X, found Y". */
export function describe(t: Token): string {
  switch (t.kind) {
    case 'ident':
      return `\`${t.text}\``;
    case 'string':
      return 'a string';
    case 'number':
      return `the number ${t.text}`;
    case 'punct':
      return `\`${t.text}\``;
    case 'eof':
      return 'the end of the file';
  }
}
