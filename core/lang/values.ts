import type { Params } from '../diagnostics/error.js';
import type { DiagnosticCode } from '../diagnostics/registry.js';
import { closest } from '../model/suggest.js';
import { byteUnits, cpuUnits, durationUnits, scaleDecimal } from '../model/quantity.js';
import { parseNumber } from './lexer.js';
import type { Expr } from './ast.js';
import type { Span } from './source.js';

/** Where lowered values report their problems. */
export interface Reporter {
  report(code: DiagnosticCode, params: Params, span: Span): void;
  /** The 1-based line a span starts on, for "the first one is on line N". */
  lineOf(span: Span): number;
}

/** A converter turns one expression into a model value, or reports and returns undefined. */
export type Conv = (e: Expr, field: string, r: Reporter) => unknown;

export function describeExpr(e: Expr): string {
  switch (e.kind) {
    case 'string':
      return 'a string';
    case 'number':
      return `the number ${e.text}`;
    case 'symbol':
      return `the word \`${e.name}\``;
    case 'list':
      return 'a list';
    case 'map':
      return 'a map';
    case 'error':
      return 'an unreadable value';
  }
}

function wrongType(e: Expr, field: string, expected: string, example: string, r: Reporter): undefined {
  if (e.kind !== 'error') r.report('CCA-E0212', { field, expected, found: describeExpr(e), example }, e.span);
  return undefined;
}

export const str =
  (example: string): Conv =>
  (e, field, r) => {
    if (e.kind === 'string') return e.value;
    const ex = e.kind === 'symbol' ? `${field} = "${e.name}"` : example;
    return wrongType(e, field, 'a "quoted string"', ex, r);
  };

/** A string, or a bare word taken as a string (names and taints read well unquoted). */
export const word =
  (example: string): Conv =>
  (e, field, r) => {
    if (e.kind === 'string') return e.value;
    if (e.kind === 'symbol') return e.name;
    return wrongType(e, field, 'a name', example, r);
  };

export const listOf =
  (item: Conv, example: string): Conv =>
  (e, field, r) => {
    if (e.kind !== 'list') return wrongType(e, field, 'a [list]', example, r);
    const out: unknown[] = [];
    let ok = true;
    for (const it of e.items) {
      const v = item(it, field, r);
      if (v === undefined) ok = false;
      else out.push(v);
    }
    return ok ? out : undefined;
  };

/** A list, or one item standing for a list of one. */
export const oneOrList =
  (item: Conv, example: string): Conv =>
  (e, field, r) =>
    e.kind === 'list' ? listOf(item, example)(e, field, r) : e.kind === 'error' ? undefined : ((v) => (v === undefined ? undefined : [v]))(item(e, field, r));

/** Map values are text; plain numbers and true/false are accepted and kept as written. */
export const textMap =
  (example: string): Conv =>
  (e, field, r) => {
    if (e.kind !== 'map') return wrongType(e, field, 'a { KEY = "value" } map', example, r);
    const out: Record<string, string> = {};
    let ok = true;
    const seen = new Map<string, Span>();
    for (const { key, value } of e.entries) {
      const first = seen.get(key.value);
      if (first) {
        r.report('CCA-E0211', { field: key.value, where: `\`${field}\``, firstLine: r.lineOf(first) }, key.span);
        ok = false;
        continue;
      }
      seen.set(key.value, key.span);
      if (value.kind === 'string') out[key.value] = value.value;
      else if (value.kind === 'number' && value.segments.length === 1 && value.segments[0]!.unit === '') out[key.value] = value.text;
      else if (value.kind === 'symbol' && (value.name === 'true' || value.name === 'false')) out[key.value] = value.name;
      else {
        ok = false;
        wrongType(value, `${field}.${key.value}`, 'a "quoted string"', `${key.quoted ? JSON.stringify(key.value) : key.value} = "..."`, r);
      }
    }
    return ok ? out : undefined;
  };

export const choice =
  (choices: readonly string[]): Conv =>
  (e, field, r) => {
    const v = e.kind === 'symbol' ? e.name : e.kind === 'string' ? e.value : undefined;
    if (v === undefined) return wrongType(e, field, `one of ${choices.join(', ')}`, `${field} = ${choices[0]}`, r);
    if (choices.includes(v)) return v;
    const near = closest(v, choices);
    r.report('CCA-E0216', { field, value: v, choices: choices.join(', '), hint: near ? `did you mean \`${near}\`?` : `write one of ${choices.join(', ')}` }, e.span);
    return undefined;
  };

export const bool: Conv = (e, field, r) => {
  if (e.kind === 'symbol' && (e.name === 'true' || e.name === 'false')) return e.name === 'true';
  return wrongType(e, field, 'true or false', `${field} = true`, r);
};

interface UnitKind {
  what: string;
  units: Readonly<Record<string, bigint>>;
  base: string;
  example: string;
  /** Several segments (1m30s) allowed. */
  compound?: boolean;
}

const BYTES: UnitKind = { what: 'a size', units: byteUnits, base: 'bytes', example: '512Mi' };
const CPU: UnitKind = { what: 'a CPU amount (cores, or millicores with m)', units: cpuUnits, base: 'millicores', example: '0.5 or 500m' };
const DURATION: UnitKind = { what: 'a duration', units: durationUnits, base: 'milliseconds', example: '10s, 2m or 1m30s', compound: true };
const COUNT: UnitKind = { what: 'a whole number', units: { '': 1n }, base: 'units', example: '3' };
const PERCENT: UnitKind = { what: 'a percentage', units: { '': 1n, '%': 1n }, base: 'percent', example: '70%' };

function quantity(kind: UnitKind): Conv {
  return (e, field, r) => {
    if (e.kind !== 'number') {
      // "8080" in quotes: suggest exactly that without them.
      const unquoted = e.kind === 'string' && parseNumber(e.value) !== undefined ? e.value : kind.example.split(' ')[0];
      return wrongType(e, field, kind.what, `${field} = ${unquoted}`, r);
    }
    if (e.segments.length > 1 && !kind.compound) {
      r.report('CCA-E0213', { field, kind: kind.what, unit: `\`${e.text.replace(/^-?[\d.]+/, '')}\``, units: unitList(kind), example: kind.example }, e.span);
      return undefined;
    }
    let total = 0;
    for (const seg of e.segments) {
      const factor = kind.units[seg.unit];
      if (factor === undefined) {
        const unit = seg.unit === '' ? 'a bare number' : `\`${seg.unit}\``;
        r.report('CCA-E0213', { field, kind: kind.what, unit, units: unitList(kind), example: unitExample(kind, seg) }, e.span);
        return undefined;
      }
      const scaled = scaleDecimal({ int: seg.int, frac: seg.frac, negative: false }, factor);
      if (!scaled.ok) {
        if (scaled.reason === 'inexact') r.report('CCA-E0218', { field, text: e.text, base: kind.base, example: kind.example }, e.span);
        else r.report('CCA-E0302', { path: field, reason: 'is too large' }, e.span);
        return undefined;
      }
      total += scaled.value;
    }
    return e.negative ? -total : total;
  };
}

/** Spellings people bring from elsewhere, mapped to ours. */
const UNIT_ALIASES: Readonly<Record<string, string[]>> = {
  KB: ['k', 'Ki'], kB: ['k', 'Ki'], kb: ['k', 'Ki'], MB: ['M', 'Mi'], mb: ['M', 'Mi'], Mb: ['M', 'Mi'], GB: ['G', 'Gi'], gb: ['G', 'Gi'], Gb: ['G', 'Gi'],
  TB: ['T', 'Ti'], tb: ['T', 'Ti'], KiB: ['Ki'], MiB: ['Mi'], GiB: ['Gi'], TiB: ['Ti'], mi: ['Mi'], gi: ['Gi'], ki: ['Ki'],
  sec: ['s'], secs: ['s'], second: ['s'], seconds: ['s'], min: ['m'], mins: ['m'], minute: ['m'], minutes: ['m'],
  hr: ['h'], hrs: ['h'], hour: ['h'], hours: ['h'], day: ['d'], days: ['d'], millis: ['ms'],
};

/** The value rewritten with the unit the user probably meant, else the kind's generic example. */
function unitExample(kind: UnitKind, seg: { int: string; frac: string; unit: string }): string {
  const number = seg.frac === '' ? seg.int : `${seg.int}.${seg.frac}`;
  const meant = (UNIT_ALIASES[seg.unit] ?? []).filter((u) => kind.units[u] !== undefined);
  if (meant.length > 0) return meant.map((u) => `${number}${u}`).join(' or ');
  if (seg.unit === '' && kind.units.s !== undefined) return `${number}s`;
  return kind.example;
}

function unitList(kind: UnitKind): string {
  return Object.keys(kind.units)
    .map((u) => (u === '' ? '(none)' : u))
    .join(', ');
}

export const bytes = quantity(BYTES);
export const cpu = quantity(CPU);
export const duration = quantity(DURATION);
export const int = quantity(COUNT);
export const percent = quantity(PERCENT);

/** A replica count (3) or a percentage (25%), the latter kept as the text "25%". */
export const countOrPercent: Conv = (e, field, r) => {
  if (e.kind === 'number' && e.segments.length === 1 && e.segments[0]!.unit === '%') {
    const v = percent(e, field, r);
    return v === undefined ? undefined : `${String(v)}%`;
  }
  return int(e, field, r);
};

/** A port by number or by the name of a declared port. */
export const portRef: Conv = (e, field, r) => {
  if (e.kind === 'number') return int(e, field, r);
  if (e.kind === 'symbol') return e.name;
  if (e.kind === 'string') return e.value;
  return wrongType(e, field, 'a port number or a port name', `${field} = 8080`, r);
};

/** File modes are octal text ("0640") so nobody writes 644 meaning 0644. */
export const mode: Conv = (e, field, r) => {
  if (e.kind === 'string' && /^0?[0-7]{3,4}$/.test(e.value)) return parseInt(e.value, 8);
  return wrongType(e, field, 'an octal file mode in quotes', `${field} = "0640"`, r);
};
