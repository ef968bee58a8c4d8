/**
 * Fact queries (issue 17 §4): predicates on decoded facts, checked against the kind's schema,
 * evaluated and projected. Pure: the server (`QUERY /v1/state`) and the CLI (`cca query`)
 * both use it, so the CLI refuses a bad predicate with the same located diagnostic before
 * it sends anything.
 */
import type { z } from 'zod';
import { makeDiagnostic, type Diagnostic } from './diagnostics/index.js';
import { layout, type KeyKind } from './keys.js';

export const OPERATORS = ['=', '!=', '<', '>', 'in', 'exists', 'prefix'] as const;
export type Operator = (typeof OPERATORS)[number];
export type Scalar = string | number | boolean | null;

/** One checked predicate: `[field, op]` for `exists`, else `[field, op, value]`. */
export type Predicate =
  | { field: string; path: string[]; op: '=' | '!='; value: Scalar }
  | { field: string; path: string[]; op: 'prefix'; value: string }
  | { field: string; path: string[]; op: '<' | '>'; value: number }
  | { field: string; path: string[]; op: 'in'; value: Scalar[] }
  | { field: string; path: string[]; op: 'exists' };

/** Where a field's path leads in a kind's schema. */
type FieldType = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any';

// zod 4 keeps a schema's structure under `_zod.def`; only the parts walked here are typed.
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  values?: unknown[];
  entries?: Record<string, unknown>;
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional', 'success']);

/**
 * The type at `path` in `schema`, or undefined when the schema has no such field. A part the
 * walk cannot see into (lazy, custom, unknown) accepts any path below it.
 */
export function fieldTypeAt(schema: z.ZodType, path: readonly string[]): FieldType | undefined {
  const def = defOf(schema);
  if (WRAPPERS.has(def.type) && def.innerType) return fieldTypeAt(def.innerType, path);
  // A transform's output has no schema: read the fields from its input (normalize keeps their names).
  if (def.type === 'pipe' && def.in && def.out) return fieldTypeAt(defOf(def.out).type === 'transform' ? def.in : def.out, path);
  if (def.type === 'union' && def.options) {
    const found = def.options.map((o) => fieldTypeAt(o, path)).filter((t) => t !== undefined);
    return found.length === 0 ? undefined : found.every((t) => t === found[0]) ? found[0] : 'any';
  }
  const [head, ...rest] = path;
  if (def.type === 'object' && def.shape) {
    if (head === undefined) return 'object';
    const field = Object.hasOwn(def.shape, head) ? def.shape[head] : undefined;
    return field ? fieldTypeAt(field, rest) : undefined;
  }
  if (def.type === 'record' && def.valueType) return head === undefined ? 'object' : fieldTypeAt(def.valueType, rest);
  if (def.type === 'array' && def.element) {
    if (head === undefined) return 'array';
    return /^\d+$/.test(head) ? fieldTypeAt(def.element, rest) : undefined;
  }
  const leaf = leafType(def);
  if (leaf === 'any') return 'any';
  return head === undefined ? leaf : undefined;
}

function leafType(def: Def): FieldType {
  if (def.type === 'string' || def.type === 'number' || def.type === 'boolean') return def.type;
  if (def.type === 'int' || def.type === 'bigint') return 'number';
  if (def.type === 'enum') {
    const vs = Object.values(def.entries ?? {});
    return vs.every((v) => typeof v === 'number') ? 'number' : 'string';
  }
  if (def.type === 'literal') {
    const v = def.values?.[0];
    return typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'string';
  }
  return 'any';
}

/** The fields a query on `kind` may name at the top level: the fact's own and its key's segments. */
export function topFields(kind: KeyKind): string[] {
  const def = defOf(layout[kind].schema);
  const obj = def.type === 'pipe' && def.in ? defOf(def.in) : def;
  const own = obj.shape ? Object.keys(obj.shape) : [];
  return [...new Set([...own, ...layout[kind].params])].sort();
}

function typeOfField(kind: KeyKind, path: readonly string[]): FieldType | undefined {
  const t = fieldTypeAt(layout[kind].schema, path);
  if (t !== undefined) return t;
  // A key segment (e.g. a replica's `service`, an assignment's `node`) is a string field.
  return path.length === 1 && (layout[kind].params as readonly string[]).includes(path[0]!) ? 'string' : undefined;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** Where a problem sits: which predicate (1-based) or select entry, and which part of it. */
export interface Location {
  /** `where[1]` (the API's JSON), `predicate 2` (the CLI's text), `select[0]`. */
  at: string;
  /** The predicate or field as written, for the message. */
  text: string;
}

const kindLabel = (kind: KeyKind) => `${kind} (${layout[kind].prefix})`;

/** Check a dot path's syntax and that `kind` has it; a diagnostic when not. */
export function checkField(kind: KeyKind, field: unknown, loc: Location): { path: string[]; type: FieldType } | Diagnostic {
  if (typeof field !== 'string' || field === '' || !field.split('.').every((s) => SEGMENT.test(s))) {
    return makeDiagnostic('CCA-E0013', { at: loc.at, text: loc.text, field: typeof field === 'string' ? field : JSON.stringify(field) ?? String(field) });
  }
  const path = field.split('.');
  const type = typeOfField(kind, path);
  if (type === undefined) return makeDiagnostic('CCA-E0011', { at: loc.at, text: loc.text, field, kind: kindLabel(kind), fields: topFields(kind).join(', ') });
  return { path, type };
}

const isScalar = (v: unknown): v is Scalar => v === null || ['string', 'number', 'boolean'].includes(typeof v);
const show = (v: unknown): string => JSON.stringify(v) ?? 'nothing';

/** One predicate as JSON (`[field, op, value?]`), checked: the predicate, or every problem in it. */
export function checkPredicate(kind: KeyKind, raw: unknown, loc: Location): Predicate | Diagnostic {
  if (!Array.isArray(raw) || raw.length < 2 || raw.length > 3) {
    return makeDiagnostic('CCA-E0012', { at: loc.at, text: loc.text, part: 'the predicate', reason: 'a predicate is [field, operator, value] (or [field, "exists"])' });
  }
  const [field, op, ...rest] = raw as unknown[];
  const f = checkField(kind, field, loc);
  if ('code' in f) return f;
  if (typeof op !== 'string' || !(OPERATORS as readonly string[]).includes(op)) {
    return makeDiagnostic('CCA-E0010', { at: loc.at, text: loc.text, op: typeof op === 'string' ? op : show(op), operators: OPERATORS.join(' ') });
  }
  const wrong = (reason: string) => makeDiagnostic('CCA-E0012', { at: loc.at, text: loc.text, part: `the value of ${op}`, reason });
  const base = { field: field as string, path: f.path };
  const o = op as Operator;
  if (o === 'exists') return rest.length === 0 ? { ...base, op: o } : wrong(`exists takes no value, got ${show(rest[0])}`);
  if (rest.length === 0) return wrong(`${op} needs a value`);
  const value = rest[0];
  switch (o) {
    case '<':
    case '>':
      if (typeof value !== 'number' || !Number.isFinite(value)) return wrong(`${op} compares numbers, got ${show(value)}`);
      if (f.type !== 'number' && f.type !== 'any') return wrong(`${field} is a ${f.type} field; ${op} compares numbers (use = or in)`);
      return { ...base, op: o, value };
    case 'in':
      if (!Array.isArray(value)) return wrong(`in needs a list, got ${show(value)}`);
      if (!value.every(isScalar)) return wrong('in takes a list of strings, numbers, booleans or null');
      return { ...base, op: o, value };
    case 'prefix':
      if (typeof value !== 'string') return wrong(`prefix needs a string, got ${show(value)}`);
      return { ...base, op: o, value };
    default:
      if (!isScalar(value)) return wrong(`${op} compares with a string, number, boolean or null, got ${show(value)}`);
      return { ...base, op: o, value };
  }
}

export type Checked<T> = { ok: true; value: T } | { ok: false; diagnostics: Diagnostic[] };

/** Every predicate and select entry of a query on `kind`, with every problem located. */
export function checkQuery(
  kind: KeyKind,
  where: readonly unknown[],
  select: readonly unknown[] | undefined,
  /** How a predicate is named: the API's `where[i]` and JSON, the CLI's number, column and text as typed. */
  locate: (i: number, raw: unknown) => Location = (i, raw) => ({ at: `where[${i}]`, text: show(raw) }),
): Checked<{ where: Predicate[]; select?: string[][] }> {
  const diagnostics: Diagnostic[] = [];
  const preds: Predicate[] = [];
  where.forEach((raw, i) => {
    const p = checkPredicate(kind, raw, locate(i, raw));
    if ('code' in p) diagnostics.push(p);
    else preds.push(p);
  });
  const paths: string[][] = [];
  (select ?? []).forEach((s, i) => {
    const f = checkField(kind, s, { at: `select[${i}]`, text: show(s) });
    if ('code' in f) diagnostics.push(f);
    else paths.push(f.path);
  });
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  return { ok: true, value: { where: preds, ...(select !== undefined ? { select: paths } : {}) } };
}

/** The value a query sees: the fact's fields, with its key's segments for those the fact lacks. */
export function rowOf(kind: KeyKind, params: Record<string, string>, fact: unknown): Record<string, unknown> {
  const own = typeof fact === 'object' && fact !== null && !Array.isArray(fact) ? (fact as Record<string, unknown>) : { value: fact };
  return { ...params, ...own };
}

function at(row: unknown, path: readonly string[]): unknown {
  let v = row;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = Object.hasOwn(v, seg) ? (v as Record<string, unknown>)[seg] : undefined;
  }
  return v;
}

/** `=` compares text forms, so `restarts=3` typed in the CLI matches the number 3. */
const text = (v: unknown): string => (isScalar(v) ? String(v) : JSON.stringify(v));

export function matches(row: unknown, p: Predicate): boolean {
  const v = at(row, p.path);
  switch (p.op) {
    case 'exists':
      return v !== undefined;
    case '=':
      return v !== undefined && text(v) === text(p.value);
    // A fact without the field is "not equal": `state!=running` lists facts with no state too.
    case '!=':
      return v === undefined || text(v) !== text(p.value);
    case '<':
      return typeof v === 'number' && v < p.value;
    case '>':
      return typeof v === 'number' && v > p.value;
    case 'in':
      return v !== undefined && p.value.some((x) => text(x) === text(v));
    case 'prefix':
      return v !== undefined && text(v).startsWith(p.value);
  }
}

/** All predicates hold (a query's `where` is a conjunction). */
export const matchesAll = (row: unknown, where: readonly Predicate[]): boolean => where.every((p) => matches(row, p));

/** The selected fields, keyed by their dot path; a field the fact lacks is absent. */
export function project(row: unknown, select: readonly string[][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of select) {
    const v = at(row, path);
    if (v !== undefined) out[path.join('.')] = v;
  }
  return out;
}

/** The kind whose facts live under `prefix` (the kind's prefix or a narrower one), if any. */
export function kindOfPrefix(prefix: string): KeyKind | undefined {
  for (const kind of Object.keys(layout) as KeyKind[]) {
    const p = layout[kind].prefix;
    if (prefix.startsWith(p) || prefix === p.slice(0, -1)) return kind;
  }
  return undefined;
}

/** Names the CLI accepts for a kind: its layout name, its prefix's name, and a plural. */
export function kindNames(): Map<string, KeyKind> {
  const names = new Map<string, KeyKind>();
  for (const kind of Object.keys(layout) as KeyKind[]) {
    const dashed = kind.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const plural = dashed.endsWith('s') || dashed === 'assigned' || dashed === 'observed' || dashed === 'lost' ? dashed : `${dashed}s`;
    for (const n of [kind.toLowerCase(), dashed, plural, layout[kind].prefix.slice(1, -1)]) names.set(n, kind);
  }
  return names;
}

/** A predicate read from the CLI's text, before it is checked against a kind. */
export interface TextPredicate {
  raw: unknown[];
  /** The predicate as written, and its 1-based column in the whole expression. */
  text: string;
  column: number;
}

const TEXT_OPS = ['!=', '^=', '=', '<', '>', '?'] as const;

/**
 * The CLI's predicate syntax, comma-separated and all required:
 * `field=value`, `field!=value`, `field<n`, `field>n`, `field^=text` (prefix), `field?`
 * (exists), `field in (a|b)` or `field=a|b` (in). Values may be "double-quoted" (JSON
 * escapes) to hold `,`, `|`, `(` or spaces. Returns the predicates in the API's JSON form,
 * or the first syntax problem with its column (CCA-E0014).
 */
export function parsePredicates(expr: string): Checked<TextPredicate[]> {
  const out: TextPredicate[] = [];
  const pieces = splitTop(expr);
  if ('code' in pieces) return { ok: false, diagnostics: [pieces] };
  for (const [i, piece] of pieces.entries()) {
    const lead = piece.text.length - piece.text.trimStart().length;
    const text = piece.text.trim();
    const column = piece.start + lead + 1;
    const err = (offset: number, reason: string): Checked<TextPredicate[]> => ({
      ok: false,
      diagnostics: [makeDiagnostic('CCA-E0014', { expr, column: column + offset, index: i + 1, text, reason })],
    });
    if (text === '') return err(0, pieces.length === 1 ? 'the expression is empty (give at least one predicate, or leave the argument out)' : 'an empty predicate (two commas in a row, or one at an end)');
    const field = /^[A-Za-z0-9_.-]+/.exec(text)?.[0];
    if (!field) return err(0, 'expected a field name (a dot path such as state or health.readiness)');
    let rest = text.slice(field.length);
    const gap = rest.length - rest.trimStart().length;
    rest = rest.trimStart();
    const opAt = field.length + gap;
    const inList = /^in\s*\(/.exec(rest);
    if (inList) {
      const close = rest.lastIndexOf(')');
      if (close < 0) return err(opAt, 'in (…) is missing its closing parenthesis');
      if (rest.slice(close + 1).trim() !== '') return err(opAt + close + 1, `unexpected text after in (…): ${rest.slice(close + 1).trim()}`);
      const values = splitValues(rest.slice(inList[0].length, close));
      if ('reason' in values) return err(opAt + inList[0].length, values.reason);
      out.push({ raw: [field, 'in', values.list], text, column });
      continue;
    }
    const op = TEXT_OPS.find((o) => rest.startsWith(o));
    if (!op) return err(opAt, `expected an operator after ${field}: = != < > ^= ? or in (…)${rest ? `, not "${rest[0]}"` : ''}`);
    const valueText = rest.slice(op.length).trim();
    if (op === '?') {
      if (valueText !== '') return err(opAt + 1, `${field}? (exists) takes no value`);
      out.push({ raw: [field, 'exists'], text, column });
      continue;
    }
    if (valueText === '') return err(opAt + op.length, `${op} needs a value (write "" for the empty string)`);
    const values = splitValues(valueText);
    if ('reason' in values) return err(opAt + op.length, values.reason);
    if (values.list.length > 1 && op !== '=') return err(opAt + op.length, `a | list of values goes with = or in (…), not ${op}`);
    if (op === '=') out.push({ raw: values.list.length > 1 ? [field, 'in', values.list] : [field, '=', values.list[0]], text, column });
    else if (op === '^=') out.push({ raw: [field, 'prefix', values.list[0]], text, column });
    else if (op === '!=') out.push({ raw: [field, '!=', values.list[0]], text, column });
    else {
      // < and > compare numbers: the text becomes one when it is one; otherwise the check says so.
      const s = values.list[0]!;
      out.push({ raw: [field, op, s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s], text, column });
    }
  }
  return { ok: true, value: out };
}

/** Split at commas outside quotes and parentheses, keeping each piece's offset. */
function splitTop(expr: string): { text: string; start: number }[] | Diagnostic {
  const pieces: { text: string; start: number }[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (c === ',' && depth === 0) {
      pieces.push({ text: expr.slice(start, i), start });
      start = i + 1;
    }
  }
  if (quoted) return makeDiagnostic('CCA-E0014', { expr, column: expr.lastIndexOf('"') + 1, index: pieces.length + 1, text: expr.slice(start).trim(), reason: 'a quoted value is not closed' });
  pieces.push({ text: expr.slice(start), start });
  return pieces;
}

/** Values separated by `|`, each bare text or a JSON "string". */
function splitValues(s: string): { list: string[] } | { reason: string } {
  const list: string[] = [];
  let i = 0;
  for (;;) {
    while (s[i] === ' ') i++;
    if (s[i] === '"') {
      let j = i + 1;
      while (j < s.length && s[j] !== '"') j += s[j] === '\\' ? 2 : 1;
      try {
        list.push(JSON.parse(s.slice(i, j + 1)) as string);
      } catch {
        return { reason: `bad quoted value ${s.slice(i, j + 1)}` };
      }
      i = j + 1;
      while (s[i] === ' ') i++;
    } else {
      const end = s.indexOf('|', i);
      const v = (end < 0 ? s.slice(i) : s.slice(i, end)).trim();
      if (v === '' ) return { reason: 'an empty value in a | list' };
      if (/[()"]/.test(v)) return { reason: `unexpected ${/[()"]/.exec(v)![0]} in the value ${v} (quote values holding it)` };
      list.push(v);
      i = end < 0 ? s.length : end;
    }
    if (i >= s.length) return { list };
    if (s[i] !== '|') return { reason: `unexpected text after a value: ${s.slice(i)}` };
    i++;
  }
}
