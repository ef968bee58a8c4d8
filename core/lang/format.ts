import type { Expr, Item, Label, Notes, SourceFile } from './ast.js';
import { parseTree } from './parse.js';
import { labelText, quote } from './quote.js';
import type { Comment } from './tokens.js';

/** Lines longer than this break lists, maps and one-line blocks onto several lines. */
export const WIDTH = 80;
const INDENT = '  ';

export interface FormatResult {
  ok: boolean;
  text: string;
  diagnostics: import('../diagnostics/types.js').Diagnostic[];
}

/**
 * Canonical layout of a `.cca` file: two-space indents, `=` aligned in runs of fields,
 * one blank line at most, comments kept (comments inside a value move above it). Text
 * with syntax errors is returned unchanged, with the diagnostics.
 */
export function formatSource(text: string, filename = '<input>'): FormatResult {
  const tree = parseTree(text, filename);
  if (!tree.file || tree.diagnostics.length > 0) return { ok: false, text, diagnostics: tree.diagnostics };
  return { ok: true, text: printFile(tree.file), diagnostics: [] };
}

/** `formatSource(text).text`: canonical text, or the input unchanged when it does not parse. */
export function format(text: string): string {
  return formatSource(text).text;
}

export function printFile(file: SourceFile): string {
  const out: string[] = [];
  printItems(file.items, 0, out, true);
  printComments(file.closing, '', out, out.length === 0);
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

function printComments(cs: Comment[], indent: string, out: string[], atStart: boolean): void {
  for (const [i, c] of cs.entries()) {
    if (c.blankBefore && !(atStart && i === 0)) out.push('');
    out.push(indent + c.text);
  }
}

function label(l: Label): string {
  return labelText(l.value, l.quoted);
}

/** A run of consecutive one-line fields, whose `=` line up. */
function alignGroups(items: Item[], indent: number): Map<Item, number> {
  const width = new Map<Item, number>();
  let group: Item[] = [];
  const flush = () => {
    const w = Math.max(0, ...group.map((g) => (g.kind === 'attr' ? g.name.value.length : 0)));
    for (const g of group) width.set(g, w);
    group = [];
  };
  for (const [i, it] of items.entries()) {
    const single = it.kind === 'attr' && !expr(it.value, indent, indent + label(it.name).length + 3).includes('\n');
    if (!single || (i > 0 && (it.blankBefore || it.leading.some((c) => c.blankBefore)))) flush();
    if (single) group.push(it);
  }
  flush();
  return width;
}

function printItems(items: Item[], depth: number, out: string[], top: boolean): void {
  const indent = INDENT.repeat(depth);
  // Top-level items are always a blank line apart, so they never form an aligned run.
  const widths = top ? new Map<Item, number>() : alignGroups(items, indent.length);
  for (const [i, it] of items.entries()) {
    const first = i === 0;
    if (top && !first) out.push('');
    printComments(it.leading, indent, out, first || top);
    const blank = it.blankBefore && !(first && it.leading.length === 0) && !(top && it.leading.length === 0);
    if (blank) out.push('');
    const lines = itemLines(it, depth, widths.get(it));
    if (it.trailing) lines[lines.length - 1] += ` ${it.trailing.text}`;
    out.push(...lines.map((l, n) => (n === 0 ? indent + l : l)));
  }
}

/** An item's lines; the first without indentation, the rest fully indented. */
function itemLines(it: Item, depth: number, alignTo: number | undefined): string[] {
  const indent = INDENT.repeat(depth);
  switch (it.kind) {
    case 'attr': {
      // Layout is decided at the unpadded column, as alignGroups did, so both agree.
      const bare = label(it.name);
      const value = expr(it.value, indent.length, indent.length + bare.length + 3);
      return `${bare.padEnd(alignTo ?? 0)} = ${value}`.split('\n');
    }
    case 'block':
      return blockLines(it, depth);
    case 'rule': {
      const sel = it.selector.key ? `${label(it.selector.base)}.${label(it.selector.key)}` : label(it.selector.base);
      const head = `${it.keyword} ${sel} ${it.op} `;
      const weight = it.weight ? ` weight ${expr(it.weight, indent.length, 0)}` : '';
      return `${head}${expr(it.value, indent.length, indent.length + head.length)}${weight}`.split('\n');
    }
    case 'accept':
      return `accept ${expr(it.value, indent.length, indent.length + 7)}`.split('\n');
    case 'allow': {
      const port = it.port ? ` on port ${expr(it.port, indent.length, 0)}` : '';
      return [`allow from service ${label(it.service)}${port}`];
    }
  }
}

function blockLines(b: Extract<Item, { kind: 'block' }>, depth: number): string[] {
  const indent = INDENT.repeat(depth);
  const head = [b.type, ...b.labels].map(label).join(' ');
  if (b.items.length === 0 && b.closing.length === 0) return [`${head} {}`];
  const inline = inlineBody(b, depth, indent.length + head.length);
  if (inline !== undefined) return [`${head} { ${inline} }`];
  const out: string[] = [];
  printItems(b.items, depth + 1, out, false);
  printComments(b.closing, indent + INDENT, out, b.items.length === 0);
  return [`${head} {`, ...out, `${indent}}`];
}

/** Small blocks of plain fields read best on one line: `port http { container = 8080 }`. */
function inlineBody(b: Extract<Item, { kind: 'block' }>, depth: number, col: number): string | undefined {
  if (depth === 0 || b.items.length > 3 || b.closing.length > 0) return undefined;
  const parts: string[] = [];
  for (const [i, it] of b.items.entries()) {
    // A blank line before the first item is dropped in print, so it must not matter here either.
    if (it.kind !== 'attr' || it.leading.length > 0 || it.trailing || (it.blankBefore && i > 0)) return undefined;
    const v = expr(it.value, 0, 0);
    if (v.includes('\n')) return undefined;
    parts.push(`${label(it.name)} = ${v}`);
  }
  const body = parts.join(' ');
  return col + body.length + 5 <= WIDTH ? body : undefined;
}

/**
 * The one-line form of an expression, or undefined when it cannot be one line (a raw
 * multi-line string inside). Memoised so nested lists cost linear time, not 2^depth.
 */
function flat(e: Expr, memo: Map<Expr, string | undefined>): string | undefined {
  if (memo.has(e)) return memo.get(e);
  let out: string | undefined;
  switch (e.kind) {
    case 'string':
      out = quote(e.value);
      break;
    case 'number':
      out = e.text;
      break;
    case 'symbol':
      out = e.name;
      break;
    case 'error':
      out = '';
      break;
    case 'list': {
      const parts = e.items.map((x) => flat(x, memo));
      const quiet = e.closing.length === 0 && e.notes.every(silent);
      out = quiet && parts.every((p) => p !== undefined) ? `[${parts.join(', ')}]` : undefined;
      break;
    }
    case 'map': {
      const parts = e.entries.map(({ key, value }) => ((v) => (v === undefined ? undefined : `${label(key)} = ${v}`))(flat(value, memo)));
      const quiet = e.closing.length === 0 && e.entries.every(silent);
      out = !quiet ? undefined : e.entries.length === 0 ? '{}' : parts.every((p) => p !== undefined) ? `{ ${parts.join(', ')} }` : undefined;
      break;
    }
  }
  if (out !== undefined && out.includes('\n')) out = undefined;
  memo.set(e, out);
  return out;
}

/** An expression at column `col`; nested lines indented from `indent`. */
function expr(e: Expr, indent: number, col: number, memo: Map<Expr, string | undefined> = new Map()): string {
  if (e.kind === 'string') return quote(e.value);
  const one = flat(e, memo);
  if (one !== undefined && (col + one.length <= WIDTH || (e.kind !== 'list' && e.kind !== 'map'))) return one;
  const pad = ' '.repeat(indent + INDENT.length);
  const close = ' '.repeat(indent);
  if (e.kind === 'list') {
    const inner = e.items.flatMap((x, i) => noted(e.notes[i], pad, `${pad}${expr(x, indent + INDENT.length, pad.length, memo)},`));
    return ['[', ...inner, ...e.closing.map((c) => pad + c.text), `${close}]`].join('\n');
  }
  if (e.kind === 'map') {
    const width = Math.max(0, ...e.entries.map(({ key }) => label(key).length));
    const inner = e.entries.flatMap((en) => {
      const k = label(en.key);
      return noted(en, pad, `${pad}${k.padEnd(width)} = ${expr(en.value, indent + INDENT.length, pad.length + k.length + 3, memo)}`);
    });
    return ['{', ...inner, ...e.closing.map((c) => pad + c.text), `${close}}`].join('\n');
  }
  return one ?? '';
}

function silent(n: Notes | undefined): boolean {
  return n === undefined || (n.leading.length === 0 && n.trailing === undefined);
}

/** One list item or map entry with its comments: those before it on their own lines, the trailing one after it. */
function noted(n: Notes | undefined, pad: string, line: string): string[] {
  if (!n) return [line];
  return [...n.leading.map((c) => pad + c.text), n.trailing ? `${line} ${n.trailing.text}` : line];
}
