import type { DiagnosticSink, Span } from './source.js';
import type { Comment, Punct, Segment, Token } from './tokens.js';

export interface LexResult {
  tokens: Token[];
  comments: Comment[];
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isAlpha = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isIdentStart = (c: number) => isAlpha(c) || c === 95; // _
const isIdentPart = (c: number) => isIdentStart(c) || isDigit(c) || c === 45; // -
const isNumberPart = (c: number) => isAlpha(c) || isDigit(c) || c === 46 || c === 95 || c === 37; // . _ %

/**
 * Split source text into tokens and comments. One pass, every step advances, so the work
 * is linear in the text length; a bad character is reported once per run and skipped.
 */
export function lex(text: string, sink: DiagnosticSink): LexResult {
  const tokens: Token[] = [];
  const comments: Comment[] = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; // a byte-order mark is not content
  let line = 1;
  let nl = true; // a newline since the last token (start of file counts)
  let lastLine = 0; // line where the last token or comment ended
  let badRun = -1; // start of a run of unexpected characters being skipped

  const push = (t: Token) => {
    tokens.push(t);
    nl = false;
  };
  const flushBad = () => {
    if (badRun >= 0) {
      const ch = String.fromCodePoint(text.codePointAt(badRun) ?? 0);
      sink.add('CCA-E0201', { char: JSON.stringify(ch) }, { start: badRun, end: badRun + ch.length });
      badRun = -1;
    }
  };
  const countLines = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (text.charCodeAt(k) === 10) line++;
  };

  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      flushBad();
      line++;
      nl = true;
      i++;
      continue;
    }
    if (c === 32 || c === 9 || c === 13) {
      flushBad();
      i++;
      continue;
    }
    const start = i;
    const startLine = line;
    // Comments
    if (c === 35 || (c === 47 && text.charCodeAt(i + 1) === 47)) {
      flushBad();
      let e = text.indexOf('\n', i);
      if (e < 0) e = text.length;
      const body = text.slice(i, e).replace(/\r$/, '');
      comments.push({ text: body, span: { start, end: start + body.length }, line, blankBefore: startLine - lastLine > 1 && lastLine > 0, ownLine: nl });
      lastLine = line;
      i = e;
      continue;
    }
    if (c === 47 && text.charCodeAt(i + 1) === 42) {
      flushBad();
      let e = text.indexOf('*/', i + 2);
      if (e < 0) {
        sink.add('CCA-E0208', {}, { start, end: start + 2 });
        e = text.length;
      } else e += 2;
      comments.push({ text: text.slice(i, e), span: { start, end: e }, line, blankBefore: startLine - lastLine > 1 && lastLine > 0, ownLine: nl });
      countLines(i, e);
      lastLine = line;
      i = e;
      continue;
    }
    if (c === 34) {
      flushBad();
      const r = text.startsWith('"""', i) ? lexTriple(text, i, sink) : lexString(text, i, sink);
      push({ kind: 'string', value: r.value, triple: r.triple, span: { start, end: r.end }, nl });
      countLines(i, r.end);
      i = r.end;
      lastLine = line;
      continue;
    }
    if (isDigit(c) || (c === 45 && isDigit(text.charCodeAt(i + 1)))) {
      flushBad();
      let e = i + 1;
      while (e < text.length && isNumberPart(text.charCodeAt(e))) e++;
      const raw = text.slice(i, e);
      const parsed = parseNumber(raw);
      if (!parsed) sink.add('CCA-E0204', { text: raw }, { start, end: e });
      push({ kind: 'number', text: raw, negative: c === 45, segments: parsed ?? [], valid: parsed !== undefined, span: { start, end: e }, nl });
      i = e;
      lastLine = line;
      continue;
    }
    if (isIdentStart(c)) {
      flushBad();
      let e = i + 1;
      while (e < text.length && isIdentPart(text.charCodeAt(e))) e++;
      push({ kind: 'ident', text: text.slice(i, e), span: { start, end: e }, nl });
      i = e;
      lastLine = line;
      continue;
    }
    const p = punctAt(text, i);
    if (p) {
      flushBad();
      push({ kind: 'punct', text: p, span: { start, end: i + p.length }, nl });
      i += p.length;
      lastLine = line;
      continue;
    }
    if (badRun < 0) badRun = i;
    i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  flushBad();
  tokens.push({ kind: 'eof', span: { start: text.length, end: text.length }, nl: true });
  return { tokens, comments };
}

function punctAt(text: string, i: number): Punct | undefined {
  const two = text.slice(i, i + 2);
  if (two === '==' || two === '!=') return two;
  const one = text[i];
  switch (one) {
    case '{':
    case '}':
    case '[':
    case ']':
    case '=':
    case ',':
    case '.':
    case ':':
      return one;
    default:
      return undefined;
  }
}

/** `-?(digits(.digits)?unit)+`, by hand: a regex with nested quantifiers could backtrack badly. */
export function parseNumber(raw: string): Segment[] | undefined {
  let i = raw.startsWith('-') ? 1 : 0;
  const segs: Segment[] = [];
  while (i < raw.length) {
    const s = i;
    while (i < raw.length && isDigit(raw.charCodeAt(i))) i++;
    if (i === s) return undefined;
    const int = raw.slice(s, i);
    let frac = '';
    if (raw[i] === '.') {
      const f = ++i;
      while (i < raw.length && isDigit(raw.charCodeAt(i))) i++;
      if (i === f) return undefined;
      frac = raw.slice(f, i);
    }
    const u = i;
    while (i < raw.length && (isAlpha(raw.charCodeAt(i)) || raw[i] === '%')) i++;
    const unit = raw.slice(u, i);
    segs.push({ int, frac, unit });
    if (unit === '' && i < raw.length) return undefined;
  }
  return segs;
}

interface StringLex {
  value: string;
  end: number;
  triple: boolean;
}

/** A one-line string with escapes. An unclosed one ends at the line break, so the next line still parses. */
function lexString(text: string, start: number, sink: DiagnosticSink): StringLex {
  let i = start + 1;
  let out = '';
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') return { value: out, end: i + 1, triple: false };
    if (c === '\n') break;
    if (c === '\\') {
      const r = escape(text, i, sink);
      out += r.value;
      i = r.end;
      continue;
    }
    out += c;
    i++;
  }
  sink.add('CCA-E0202', { where: 'line', quote: '"' }, { start, end: Math.min(i, start + 1) });
  return { value: out, end: i, triple: false };
}

/** JSON's escapes (so any JSON string literal is a .cca string) plus \0 and \u{...}. */
const simpleEscapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '/': '/', '"': '"', '\\': '\\', '0': '\0' };

function escape(text: string, i: number, sink: DiagnosticSink): { value: string; end: number } {
  const e = text[i + 1];
  if (e !== undefined && Object.hasOwn(simpleEscapes, e)) return { value: simpleEscapes[e]!, end: i + 2 };
  if (e === 'u') {
    const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(text.slice(i + 2, i + 10));
    const plain = /^[0-9a-fA-F]{4}/.exec(text.slice(i + 2, i + 6));
    const hex = braced ? braced[1]! : plain ? plain[0] : undefined;
    const cp = hex === undefined ? -1 : parseInt(hex, 16);
    if (cp >= 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff)) {
      return { value: String.fromCodePoint(cp), end: i + 2 + (braced ? braced[0].length : 4) };
    }
  }
  const shown = e === undefined || e === '\n' ? '\\' : `\\${e}`;
  sink.add('CCA-E0203', { escape: shown }, { start: i, end: i + shown.length });
  return { value: e === undefined || e === '\n' ? '' : e, end: e === undefined || e === '\n' ? i + 1 : i + 2 };
}

/** `"""raw text"""`: no escapes; a line break right after the opening quotes is not content. */
function lexTriple(text: string, start: number, sink: DiagnosticSink): StringLex {
  let from = start + 3;
  if (text.startsWith('\r\n', from)) from += 2;
  else if (text[from] === '\n') from += 1;
  const close = text.indexOf('"""', from);
  if (close < 0) {
    sink.add('CCA-E0202', { where: 'file', quote: '"""' }, { start, end: start + 3 });
    return { value: text.slice(from), end: text.length, triple: true };
  }
  return { value: text.slice(from, close), end: close + 3, triple: true };
}

export type { Span };
