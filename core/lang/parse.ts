import { toDiagnostic } from '../diagnostics/coerce.js';
import type { Diagnostic } from '../diagnostics/types.js';
import { validateServiceSet } from '../model/service-set.js';
import { validateService } from '../model/validate.js';
import type { SpecIssue } from '../model/issues.js';
import type { ServiceSpec } from '../model/service.js';
import { closest } from '../model/suggest.js';
import type { Item, SourceFile } from './ast.js';
import { lowerService, pathKey } from './lower.js';
import type { LoweredService } from './lower.js';
import { parseSyntax } from './parser.js';
import { DiagnosticSink, LineIndex } from './source.js';
import type { Span } from './source.js';

/** Larger files are refused with CCA-E0215 (the parser is linear, but a spec this large is a mistake). */
export const MAX_SOURCE_CHARS = 4 * 1024 * 1024;

export interface ParseOptions {
  /**
   * Names of services that exist elsewhere (the store, other files), which `after` may
   * name. 'unchecked' skips the unknown-target check (e.g. when formatting one file of many).
   */
  existing?: Iterable<string> | 'unchecked';
  /** The stored services' `after` lists, so a cycle through one of them is found (see validateServiceSet). */
  storedAfter?: ReadonlyMap<string, readonly string[]>;
}

export interface ParseResult {
  /** The services that are valid. A file with any diagnostic must not be applied. */
  services: ServiceSpec[];
  diagnostics: Diagnostic[];
}

export interface SyntaxOnly {
  file: SourceFile | undefined;
  diagnostics: Diagnostic[];
  work: number;
}

/** Syntax only: used by the formatter. Never throws. */
export function parseTree(text: string, filename = '<input>'): SyntaxOnly {
  try {
    const lines = new LineIndex(text);
    const sink = new DiagnosticSink(filename, lines);
    if (text.length > MAX_SOURCE_CHARS) {
      sink.add('CCA-E0215', { bytes: text.length, max: MAX_SOURCE_CHARS }, { start: 0, end: 0 });
      return { file: undefined, diagnostics: sink.list, work: 0 };
    }
    const r = parseSyntax(text, sink, lines);
    return { file: r.file, diagnostics: sink.list, work: r.work };
  } catch (e) {
    return { file: undefined, diagnostics: [toDiagnostic(e, 'the .cca parser')], work: 0 };
  }
}

export interface ParseStats extends ParseResult {
  /** Parser steps; linear in the input (asserted by the fuzz tests). */
  work: number;
}

/** `.cca` text → valid services and coded diagnostics with file:line:col spans. Never throws. */
export function parse(text: string, filename = '<input>', opts: ParseOptions = {}): ParseResult {
  const { services, diagnostics } = parseWithStats(text, filename, opts);
  return { services, diagnostics };
}

export function parseWithStats(text: string, filename = '<input>', opts: ParseOptions = {}): ParseStats {
  return parseFilesWithStats([{ name: filename, text }], opts);
}

export interface SourceInput {
  name: string;
  text: string;
}

/**
 * Several files applied together (`cca apply dir/`): each parsed on its own, then the set
 * rules (unique names, `after` targets, cycles) checked across all of them. Never throws.
 */
export function parseFiles(files: readonly SourceInput[], opts: ParseOptions = {}): ParseResult {
  const { services, diagnostics } = parseFilesWithStats(files, opts);
  return { services, diagnostics };
}

function parseFilesWithStats(files: readonly SourceInput[], opts: ParseOptions): ParseStats {
  try {
    const stages = files.map((f) => parseOne(f.text, f.name));
    checkSet(stages, opts);
    return {
      services: stages.flatMap((st) => st.valid.map((x) => x.spec)),
      diagnostics: stages.flatMap((st) => ordered(st.sink.list)),
      work: stages.reduce((n, st) => n + st.work, 0),
    };
  } catch (e) {
    // Only a bug gets here; it becomes CCA-E0001, never a stack trace.
    return { services: [], diagnostics: [toDiagnostic(e, 'the .cca parser')], work: 0 };
  }
}

interface Valid {
  spec: ServiceSpec;
  lowered: LoweredService;
  sink: DiagnosticSink;
}

interface FileStage {
  sink: DiagnosticSink;
  valid: Valid[];
  work: number;
}

/** One file: syntax, lowering, and each service's own validation. */
function parseOne(text: string, filename: string): FileStage {
  const lines = new LineIndex(text);
  const sink = new DiagnosticSink(filename, lines);
  if (text.length > MAX_SOURCE_CHARS) {
    sink.add('CCA-E0215', { bytes: text.length, max: MAX_SOURCE_CHARS }, { start: 0, end: 0 });
    return { sink, valid: [], work: 0 };
  }
  const syntax = parseSyntax(text, sink, lines);
  const lowered: LoweredService[] = [];
  for (const item of syntax.file.items) {
    if (sink.full) break;
    if (item.kind === 'block' && item.type.value === 'service') {
      const l = lowerService(item, lines, (code, params, span) => sink.add(code, params, span));
      if (l) lowered.push(l);
    } else topLevelError(item, sink);
  }
  const valid: Valid[] = [];
  for (const l of lowered) {
    if (sink.full) break;
    if (l.failed) {
      crossCheckPartial(l, sink);
      continue;
    }
    const r = validateService(l.input);
    if (r.ok) valid.push({ spec: r.value, lowered: l, sink });
    else for (const issue of r.issues) addIssue(sink, issue, l);
  }
  return { sink, valid, work: syntax.work };
}

/** Rules across every file's valid services, reported in the file that holds the service. */
function checkSet(stages: FileStage[], opts: ParseOptions): void {
  const valid = stages.flatMap((st) => st.valid);
  const existing = opts.existing === 'unchecked' ? undefined : [...(opts.existing ?? [])];
  const issues = validateServiceSet(
    valid.map((x) => x.spec),
    { existing: existing ?? [], ...(opts.storedAfter ? { storedAfter: opts.storedAfter } : {}) },
  )
    .filter((i) => existing !== undefined || i.code !== 'CCA-E0305')
    // Allowed clients are checked against a cluster's services (at apply), not in a lone file:
    // a file of servers whose clients live in another file is normal.
    .filter((i) => (opts.existing !== undefined && opts.existing !== 'unchecked') || i.code !== 'CCA-E0323');
  for (const issue of issues) {
    // Point at the duplicate's later definition, else at the named service.
    const owners = valid.filter((x) => x.spec.name === issue.service);
    const owner = issue.code === 'CCA-E0309' ? owners[owners.length - 1] : owners[0];
    if (owner) addIssue(owner.sink, issue, owner.lowered);
  }
}

/**
 * A service with lowering errors still gets its cross-field rules checked, so one run reports
 * a port clash next to a typo. Only rules over values that did lower are kept.
 */
// Path and mode rules (E0324..E0327) judge one value that did lower, so they are kept too.
const PARTIAL_CODES = new Set(['CCA-E0303', 'CCA-E0304', 'CCA-E0307', 'CCA-E0308', 'CCA-E0310', 'CCA-E0313', 'CCA-E0314', 'CCA-E0315', 'CCA-E0324', 'CCA-E0325', 'CCA-E0326', 'CCA-E0327']);

function crossCheckPartial(l: LoweredService, sink: DiagnosticSink): void {
  const input = { ...l.input, image: typeof l.input.image === 'string' ? l.input.image : 'placeholder' };
  const r = validateService(input);
  if (r.ok) return;
  const failed = l.failedPaths.map((p) => pathKey(p));
  for (const issue of r.issues) {
    const key = pathKey(issue.path);
    if (!PARTIAL_CODES.has(issue.code) || failed.some((f) => key === f || key.startsWith(`${f}.`) || f.startsWith(`${key}.`))) continue;
    addIssue(sink, issue, l);
  }
}

function addIssue(sink: DiagnosticSink, issue: SpecIssue, l: LoweredService): void {
  sink.add(issue.code, issue.params, spanFor(issue.path, l));
}

/** The most specific recorded span for a spec path: the path itself, else its nearest parent. */
export function spanFor(path: readonly (string | number)[], l: LoweredService): Span {
  for (let n = path.length; n >= 0; n--) {
    const s = l.spans.get(pathKey(path.slice(0, n)));
    if (s) return s;
  }
  return l.header;
}

function topLevelError(item: Item, sink: DiagnosticSink): void {
  if (item.kind === 'block') {
    const near = closest(item.type.value, ['service']);
    const hint = near ? 'did you mean `service`?' : 'wrap it in service NAME { ... }';
    sink.add('CCA-E0209', { found: `a \`${item.type.value}\` block`, hint }, item.type.span);
  } else {
    const word = item.kind === 'attr' ? item.name.value : item.kind === 'rule' ? item.keyword : item.kind;
    sink.add('CCA-E0209', { found: `\`${word}\``, hint: 'move it inside a service NAME { ... } block' }, item.span);
  }
}

/** By position, keeping the "too many errors" note last. */
function ordered(list: Diagnostic[]): Diagnostic[] {
  const key = (d: Diagnostic) => (d.code === 'CCA-E0220' ? Number.MAX_SAFE_INTEGER : (d.span?.line ?? 0) * 1e6 + (d.span?.col ?? 0));
  return list
    .map((d, i) => ({ d, i }))
    .sort((a, b) => key(a.d) - key(b.d) || a.i - b.i)
    .map((x) => x.d);
}
