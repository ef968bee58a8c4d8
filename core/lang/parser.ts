import type { ConstraintOp } from '../model/constraints.js';
import { STATEMENT_KEYWORDS } from './ast.js';
import type { Expr, Item, Label, MapEntry, Notes, Selector, SourceFile } from './ast.js';
import { lex } from './lexer.js';
import type { DiagnosticSink, LineIndex, Span } from './source.js';
import { describe } from './tokens.js';
import type { Comment, Token } from './tokens.js';

/** Blocks, lists and maps nest at most this deep; deeper input gets CCA-E0207 instead of a deep stack. */
export const MAX_DEPTH = 32;

export interface SyntaxResult {
  file: SourceFile;
  /**
   * Steps the lexer and parser took. Every loop iteration consumes a token or leaves its
   * loop, so this is linear in the input; the fuzz tests assert a bound on it.
   */
  work: number;
  tokens: number;
}

/** An item before its comments and spacing are attached (Omit distributed over the union). */
type ItemBody = Item extends infer I ? (I extends unknown ? Omit<I, 'leading' | 'trailing' | 'blankBefore'> : never) : never;

const VALUE_HINT = 'write a value such as 3, 64Mi, 10s, "text", a word, [a list] or { a = "map" }';

/** Text → syntax tree, never throwing: every problem is a diagnostic in `sink`. */
export function parseSyntax(text: string, sink: DiagnosticSink, lines: LineIndex): SyntaxResult {
  const { tokens, comments } = lex(text, sink);
  const p = new Parser(tokens, comments, sink, lines);
  const items = p.items(true);
  const closing = p.commentsBefore(Number.POSITIVE_INFINITY);
  return { file: { items, closing }, work: p.work + text.length, tokens: tokens.length };
}

class Parser {
  pos = 0;
  depth = 0;
  work = 0;
  private ci = 0;
  /** Comments read before an item that failed to parse; the next item takes them. */
  private orphans: Comment[] = [];

  constructor(
    private readonly tokens: Token[],
    private readonly comments: Comment[],
    private readonly sink: DiagnosticSink,
    private readonly lines: LineIndex,
  ) {}

  private peek(k = 0): Token {
    return this.tokens[Math.min(this.pos + k, this.tokens.length - 1)]!;
  }

  private next(): Token {
    this.work++;
    const t = this.peek();
    if (t.kind !== 'eof') this.pos++;
    return t;
  }

  private prevEnd(): number {
    return this.pos > 0 ? this.tokens[this.pos - 1]!.span.end : 0;
  }

  private isPunct(t: Token, text: string): boolean {
    return t.kind === 'punct' && t.text === text;
  }

  private isWord(t: Token, word: string): boolean {
    return t.kind === 'ident' && t.text === word;
  }

  commentsBefore(offset: number): Comment[] {
    const out = this.orphans;
    this.orphans = [];
    while (this.ci < this.comments.length && this.comments[this.ci]!.span.start < offset) out.push(this.comments[this.ci++]!);
    return out;
  }

  /**
   * Attach the comment that follows the last token read on the same line, with no token in
   * between (in `a = 1 } # x` the comment belongs to the block, not to `a`).
   */
  private withTrailing(n: Notes): Notes {
    const c = this.comments[this.ci];
    const end = this.prevEnd();
    if (c && !c.ownLine && c.span.start >= end && this.lines.line(c.span.start) === this.lines.line(end) && c.span.start < this.peek().span.start) {
      n.trailing = c;
      this.ci++;
    }
    return n;
  }

  private error(expected: string, t: Token, hint: string): void {
    this.sink.add('CCA-E0205', { expected, found: describe(t), hint }, t.span);
  }

  items(top: boolean): Item[] {
    const out: Item[] = [];
    for (;;) {
      this.work++;
      if (this.sink.full) {
        this.pos = this.tokens.length - 1;
        break;
      }
      const t = this.peek();
      if (t.kind === 'eof') break;
      if (this.isPunct(t, '}')) {
        if (!top) break;
        this.error('a `service NAME { ... }` block', t, 'remove the extra `}`, or check the braces above it');
        this.next();
        continue;
      }
      const item = this.item();
      if (item) out.push(item);
    }
    return out;
  }

  private item(): Item | undefined {
    const t = this.peek();
    const leading = this.commentsBefore(t.span.start);
    const before = leading.length > 0 ? leading[leading.length - 1]!.span.end : this.prevEnd();
    const blankBefore = (this.pos > 0 || leading.length > 0) && this.lines.line(t.span.start) - this.lines.line(before) > 1;
    const body = this.itemBody(t);
    if (!body) {
      this.orphans = leading;
      return undefined;
    }
    const end = this.prevEnd();
    // Comments that sat inside the item (e.g. between list elements) move before it.
    const inner = this.commentsBefore(end);
    const item = { ...body, span: { start: t.span.start, end }, leading: [...leading, ...inner], blankBefore } as Item;
    const { trailing } = this.withTrailing({ leading: [] });
    if (trailing) item.trailing = trailing;
    return item;
  }

  private itemBody(t: Token): ItemBody | undefined {
    if (t.kind !== 'ident') {
      this.error('a field, a block or a rule', t, 'start each entry with a word, like `replicas = 3` or `port http { container = 8080 }`');
      this.recover();
      return undefined;
    }
    if (this.isPunct(this.peek(1), '=')) return this.attribute();
    if ((STATEMENT_KEYWORDS as readonly string[]).includes(t.text)) return this.statement(t.text);
    return this.block();
  }

  private label(t: Token): Label {
    this.next();
    return t.kind === 'string'
      ? { value: t.value, quoted: true, span: t.span }
      : { value: t.kind === 'ident' ? t.text : '', quoted: false, span: t.span };
  }

  private attribute(): ItemBody {
    const name = this.label(this.peek());
    this.next(); // =
    const value = this.expr();
    return { kind: 'attr', name, value, span: name.span };
  }

  private block(): ItemBody | undefined {
    const type = this.label(this.peek());
    const labels: Label[] = [];
    while (this.peek().kind === 'ident' || this.peek().kind === 'string') labels.push(this.label(this.peek()));
    const open = this.peek();
    if (!this.isPunct(open, '{')) {
      const hint = labels.length === 0 ? `to set a field write \`${type.value} = VALUE\`; a block is \`${type.value} NAME { ... }\`` : 'a block header is `TYPE [NAME] {`';
      this.error('`{` or `=`', open, hint);
      this.recover();
      return undefined;
    }
    if (this.depth + 1 > MAX_DEPTH) {
      this.tooDeep(open);
      return { kind: 'block', type, labels, items: [], closing: [], span: type.span };
    }
    this.next();
    this.depth++;
    const items = this.items(false);
    const close = this.peek();
    const closing = this.commentsBefore(close.span.start);
    if (this.isPunct(close, '}')) this.next();
    else this.sink.add('CCA-E0206', { open: '`{`', close: '`}`' }, open.span);
    this.depth--;
    return { kind: 'block', type, labels, items, closing, span: type.span };
  }

  private statement(keyword: string): ItemBody | undefined {
    const kw = this.next();
    if (keyword === 'accept') return { kind: 'accept', value: this.expr(), span: kw.span };
    if (keyword === 'allow') return this.allow(kw);
    const selector = this.selector();
    if (!selector) return undefined;
    const op = this.op();
    if (!op) return undefined;
    const value = this.expr();
    const rule: ItemBody = { kind: 'rule', keyword: keyword as 'require' | 'restrict' | 'prefer', selector, op: op.op, opSpan: op.span, value, span: kw.span };
    // `weight` belongs to prefer. After require/restrict, `weight 5` is a mistake worth naming;
    // any other `weight ...` (a field or block of that name) starts the next entry.
    const w = this.peek();
    const after = this.peek(1);
    if (this.isWord(w, 'weight') && keyword === 'prefer' && !this.isPunct(after, '=')) {
      this.next();
      (rule as { weight?: Expr }).weight = this.expr();
    } else if (this.isWord(w, 'weight') && after.kind === 'number') {
      this.next();
      this.next();
      this.sink.add('CCA-E0217', { reason: `only prefer takes a weight, not ${keyword}` }, w.span);
    }
    return rule;
  }

  private selector(): Selector | undefined {
    const t = this.peek();
    if (t.kind !== 'ident') {
      this.sink.add('CCA-E0217', { reason: `expected an attribute (zone, node or label.KEY), found ${describe(t)}` }, t.span);
      this.recover();
      return undefined;
    }
    const base = this.label(t);
    if (!this.isPunct(this.peek(), '.')) return { base, span: base.span };
    this.next();
    const k = this.peek();
    if (k.kind !== 'ident' && k.kind !== 'string') {
      this.sink.add('CCA-E0217', { reason: `expected a label key after \`${base.value}.\`, found ${describe(k)}` }, k.span);
      this.recover();
      return undefined;
    }
    const key = this.label(k);
    return { base, key, span: { start: base.span.start, end: key.span.end } };
  }

  private op(): { op: ConstraintOp; span: Span } | undefined {
    const t = this.peek();
    if (this.isPunct(t, '==') || this.isPunct(t, '!=')) {
      this.next();
      return { op: (t as { text: ConstraintOp }).text, span: t.span };
    }
    if (this.isWord(t, 'in')) {
      this.next();
      return { op: 'in', span: t.span };
    }
    if (this.isWord(t, 'not') && this.isWord(this.peek(1), 'in')) {
      this.next();
      const i = this.next();
      return { op: 'not in', span: { start: t.span.start, end: i.span.end } };
    }
    this.sink.add('CCA-E0217', { reason: `expected ==, !=, in or not in, found ${describe(t)}` }, t.span);
    this.recover();
    return undefined;
  }

  private expectWord(word: string, hint: string): boolean {
    const t = this.peek();
    if (this.isWord(t, word)) {
      this.next();
      return true;
    }
    this.error(`\`${word}\``, t, hint);
    this.recover();
    return false;
  }

  private allow(kw: Token): ItemBody | undefined {
    const hint = 'write allow from service NAME [on port PORT]';
    if (!this.expectWord('from', hint) || !this.expectWord('service', hint)) return undefined;
    const t = this.peek();
    if (t.kind !== 'ident' && t.kind !== 'string') {
      this.error('a service name', t, hint);
      this.recover();
      return undefined;
    }
    const service = this.label(t);
    const item: ItemBody = { kind: 'allow', service, span: kw.span };
    if (this.isWord(this.peek(), 'on') && !this.isPunct(this.peek(1), '=')) {
      this.next();
      if (!this.expectWord('port', hint)) return undefined;
      (item as { port?: Expr }).port = this.expr();
    }
    return item;
  }

  private canStartExpr(t: Token): boolean {
    return t.kind === 'string' || t.kind === 'number' || t.kind === 'ident' || this.isPunct(t, '[') || this.isPunct(t, '{');
  }

  expr(): Expr {
    this.work++;
    const t = this.peek();
    switch (t.kind) {
      case 'string':
        this.next();
        return { kind: 'string', value: t.value, span: t.span };
      case 'number':
        this.next();
        return t.valid ? { kind: 'number', text: t.text, negative: t.negative, segments: t.segments, span: t.span } : { kind: 'error', span: t.span };
      case 'ident':
        this.next();
        return { kind: 'symbol', name: t.text, span: t.span };
      default:
        break;
    }
    if (this.isPunct(t, '[')) return this.list();
    if (this.isPunct(t, '{')) return this.map();
    this.error('a value', t, VALUE_HINT);
    // Consume stray operators so the caller moves on; keep closers and the end for the enclosing construct.
    if (t.kind === 'punct' && t.text !== '}' && t.text !== ']') this.next();
    return { kind: 'error', span: t.span };
  }

  private tooDeep(open: Token): void {
    this.sink.add('CCA-E0207', { max: MAX_DEPTH }, open.span);
    this.skipBalanced();
  }

  /** From an opening bracket, skip to just past its partner (or the end), without recursion. */
  private skipBalanced(): void {
    let n = 0;
    for (;;) {
      const t = this.next();
      if (t.kind === 'eof') return;
      if (this.isPunct(t, '{') || this.isPunct(t, '[')) n++;
      else if ((this.isPunct(t, '}') || this.isPunct(t, ']')) && --n <= 0) return;
    }
  }

  private list(): Expr {
    const open = this.peek();
    if (this.depth + 1 > MAX_DEPTH) {
      this.tooDeep(open);
      return { kind: 'error', span: { start: open.span.start, end: this.prevEnd() } };
    }
    this.next();
    this.depth++;
    const items: Expr[] = [];
    const notes: Notes[] = [];
    let closing: Comment[] = [];
    for (;;) {
      this.work++;
      const t = this.peek();
      if (this.isPunct(t, ']')) {
        closing = this.commentsBefore(t.span.start);
        this.next();
        break;
      }
      if (t.kind === 'eof' || this.isPunct(t, '}') || this.sink.full) {
        this.sink.add('CCA-E0206', { open: '`[`', close: '`]`' }, open.span);
        break;
      }
      const leading = this.commentsBefore(t.span.start);
      items.push(this.expr());
      const sep = this.peek();
      if (this.isPunct(sep, ',')) this.next();
      notes.push(this.withTrailing({ leading }));
      if (this.isPunct(sep, ',')) continue;
      if (this.isPunct(sep, ']')) continue;
      else if (this.canStartExpr(sep)) this.error('`,` or `]`', sep, 'separate list items with commas');
      else if (sep.kind === 'punct' && sep.text !== '}') {
        this.error('`,` or `]`', sep, 'separate list items with commas and close the list with `]`');
        this.next();
      }
    }
    this.depth--;
    return { kind: 'list', items, notes, closing, span: { start: open.span.start, end: this.prevEnd() } };
  }

  private map(): Expr {
    const open = this.peek();
    if (this.depth + 1 > MAX_DEPTH) {
      this.tooDeep(open);
      return { kind: 'error', span: { start: open.span.start, end: this.prevEnd() } };
    }
    this.next();
    this.depth++;
    const entries: MapEntry[] = [];
    let closing: Comment[] = [];
    for (;;) {
      this.work++;
      const t = this.peek();
      if (this.isPunct(t, '}')) {
        closing = this.commentsBefore(t.span.start);
        this.next();
        break;
      }
      if (t.kind === 'eof' || this.isPunct(t, ']') || this.sink.full) {
        this.sink.add('CCA-E0206', { open: '`{`', close: '`}`' }, open.span);
        break;
      }
      if (t.kind !== 'ident' && t.kind !== 'string') {
        this.error('a map key', t, 'write entries as KEY = "value"; quote keys that are not plain words');
        this.next();
        continue;
      }
      const key = this.label(t);
      const eq = this.peek();
      if (this.isPunct(eq, '=') || this.isPunct(eq, ':')) this.next();
      else {
        this.error('`=`', eq, `write ${key.value} = "value"`);
        if (!this.canStartExpr(eq)) continue;
      }
      const leading = this.commentsBefore(key.span.start);
      const value = this.expr();
      if (this.isPunct(this.peek(), ',')) this.next();
      entries.push({ key, value, ...this.withTrailing({ leading }) });
    }
    this.depth--;
    return { kind: 'map', entries, closing, span: { start: open.span.start, end: this.prevEnd() } };
  }

  /**
   * Skip to a likely start of the next entry: a word first on its line, or the `}` closing
   * the current block. Brackets opened while skipping are skipped whole. Always moves.
   */
  private recover(): void {
    let n = 0;
    let first = true;
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') return;
      if (!first && n === 0 && t.nl && t.kind === 'ident') return;
      if (this.isPunct(t, '}') || this.isPunct(t, ']')) {
        if (n === 0) {
          if (first && this.isPunct(t, ']')) this.next();
          return;
        }
        n--;
      } else if (this.isPunct(t, '{') || this.isPunct(t, '[')) n++;
      this.next();
      first = false;
    }
  }
}
