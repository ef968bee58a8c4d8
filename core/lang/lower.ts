import type { Params } from '../diagnostics/error.js';
import type { DiagnosticCode } from '../diagnostics/registry.js';
import { closest } from '../model/suggest.js';
import type { Block, Item, Label } from './ast.js';
import { BLOCKS, HEALTH_KINDS, SERVICE_FIELDS, STATEMENTS } from './fields.js';
import type { BlockDef, FieldDef, Path } from './fields.js';
import { lowerStatement } from './lower-rules.js';
import type { RuleContext } from './lower-rules.js';
import type { LineIndex, Span } from './source.js';

export type { Path } from './fields.js';

/** A service block turned into spec input, with a span for every path it set (for mapping later issues). */
export interface LoweredService {
  name: string;
  input: Record<string, unknown>;
  spans: Map<string, Span>;
  header: Span;
  /** Problems were reported while lowering; the input is incomplete. */
  failed: boolean;
  /** Paths whose values could not be lowered (left out of `input`). */
  failedPaths: Path[];
}

export function pathKey(path: Path): string {
  return path.join('.');
}

function setPath(obj: Record<string, unknown>, path: Path, value: unknown): void {
  let cur: Record<string, unknown> = obj;
  for (let i = 0; i < path.length - 1; i++) {
    const k = String(path[i]);
    const next = cur[k];
    if (typeof next !== 'object' || next === null) cur[k] = typeof path[i + 1] === 'number' ? [] : {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[String(path[path.length - 1])] = value;
}

/** Lowering state for one service block. */
class Lowering implements RuleContext {
  readonly spans = new Map<string, Span>();
  readonly failedPaths: Path[] = [];
  failed = false;

  constructor(
    private readonly sinkReport: (code: DiagnosticCode, params: Params, span: Span) => void,
    private readonly lines: LineIndex,
    readonly service: string,
  ) {}

  report(code: DiagnosticCode, params: Params, span: Span): void {
    this.failed = true;
    this.sinkReport(code, params, span);
  }

  span(path: Path, span: Span): void {
    this.spans.set(pathKey(path), span);
  }

  lineOf(span: Span): number {
    return this.lines.line(span.start);
  }

  /** Fields of one block body into `obj`; blocks and statements go through the callbacks. */
  fields(
    items: Item[],
    defs: Record<string, FieldDef>,
    where: string,
    obj: Record<string, unknown>,
    base: Path,
    nested?: { blocks: Record<string, BlockDef>; statement: (it: Item) => void; block: (b: Block) => void },
  ): Map<string, Span> {
    const seen = new Map<string, Span>();
    const known = [...Object.keys(defs), ...(nested ? [...Object.keys(nested.blocks), ...STATEMENTS] : [])];
    for (const it of items) {
      if (it.kind === 'attr') {
        const def = defs[it.name.value];
        if (!def) {
          if (nested?.blocks[it.name.value]) {
            const ex = nested.blocks[it.name.value]!.example;
            this.report('CCA-E0212', { field: it.name.value, expected: 'a block', found: 'a value after `=`', example: ex }, it.name.span);
          } else this.unknown(it.name, where, known);
          continue;
        }
        const first = seen.get(it.name.value);
        if (first) {
          this.report('CCA-E0211', { field: it.name.value, where, firstLine: this.lineOf(first) }, it.name.span);
          continue;
        }
        seen.set(it.name.value, it.name.span);
        const value = def.conv(it.value, it.name.value, this);
        if (value === undefined) {
          this.failed = true;
          this.failedPaths.push([...base, ...def.path]);
          continue;
        }
        setPath(obj, def.path, value);
        this.span([...base, ...def.path], it.value.span);
        if (it.value.kind === 'map') for (const e of it.value.entries) this.span([...base, ...def.path, e.key.value], e.key.span);
        if (it.value.kind === 'list') for (const [i, x] of it.value.items.entries()) this.span([...base, ...def.path, i], x.span);
      } else if (it.kind === 'block') {
        if (nested?.blocks[it.type.value]) nested.block(it);
        else if (defs[it.type.value]) {
          this.report('CCA-E0212', { field: it.type.value, expected: 'a value', found: 'a block', example: `${it.type.value} = ...` }, it.type.span);
        } else this.unknown(it.type, where, known);
      } else if (nested) nested.statement(it);
      else {
        const word = it.kind === 'rule' ? it.keyword : it.kind;
        this.report('CCA-E0210', { where, field: word, hint: `\`${word}\` rules go directly inside the service block` }, it.span);
      }
    }
    return seen;
  }

  unknown(name: Label, where: string, known: string[]): void {
    const near = closest(name.value, known);
    const hint = near ? `did you mean \`${near}\`?` : `the fields here are: ${known.join(', ')}`;
    this.report('CCA-E0210', { where, field: name.value, hint }, name.span);
  }

  missing(seen: Map<string, Span>, required: Record<string, string>, where: string, span: Span): void {
    for (const [field, example] of Object.entries(required)) {
      if (!seen.has(field)) this.report('CCA-E0219', { where, field, example }, span);
    }
  }
}

function headerSpan(b: Block): Span {
  const last = b.labels[b.labels.length - 1];
  return { start: b.type.span.start, end: (last ?? b.type).span.end };
}

function checkLabels(b: Block, want: number, example: string, ctx: Lowering): boolean {
  if (b.labels.length === want) return true;
  const expected = want === 0 ? 'no name' : 'one name';
  ctx.report('CCA-E0214', { block: b.type.value, expected, found: b.labels.length === 0 ? 'none' : `${b.labels.length} names`, example }, headerSpan(b));
  return false;
}

function lowerNested(b: Block, out: Record<string, unknown>, ctx: Lowering, seenBlocks: Map<string, Span>): void {
  const def = BLOCKS[b.type.value]!;
  if (!checkLabels(b, def.labels.length, def.example, ctx)) return;
  const labels = b.labels.map((l) => l.value);
  const where = `${b.type.value}${labels.map((l) => ` ${l}`).join('')}`;
  if (b.type.value === 'health' && !HEALTH_KINDS.includes(labels[0]!)) {
    const near = closest(labels[0]!, HEALTH_KINDS);
    ctx.report('CCA-E0216', { field: 'health', value: labels[0]!, choices: HEALTH_KINDS.join(', '), hint: near ? `did you mean \`${near}\`?` : 'write health liveness { ... } or health readiness { ... }' }, b.labels[0]!.span);
    return;
  }
  if (def.labels.length === 0 || b.type.value === 'health') {
    const first = seenBlocks.get(where);
    if (first) {
      ctx.report('CCA-E0211', { field: where, where: `service ${ctx.service}`, firstLine: ctx.lineOf(first) }, headerSpan(b));
      return;
    }
    seenBlocks.set(where, headerSpan(b));
  }
  const { path, init } = def.into(out, labels);
  ctx.span(path, headerSpan(b));
  if (b.labels[0]) ctx.span([...path, 'name'], b.labels[0].span);
  const obj: Record<string, unknown> = { ...init };
    const seen = ctx.fields(b.items, def.fields, where, obj, path);
  ctx.missing(seen, def.required, where, headerSpan(b));
  const done = def.finish ? def.finish(obj, headerSpan(b), ctx, labels[0] ?? '') : obj;
  if (!done) {
    ctx.failedPaths.push(path);
    return;
  }
  if (def.finish) {
    // Probe fields moved under `probe`: keep their spans reachable.
    for (const k of ['http', 'tcp', 'exec', 'port']) {
      const s = ctx.spans.get(pathKey([...path, k]));
      if (s) ctx.span([...path, 'probe', k === 'http' ? 'path' : k === 'exec' ? 'command' : 'port'], s);
    }
  }
  setPath(out, path, done);
}

/** One `service NAME { ... }` block → spec input (not yet validated) and the spans of its paths. */
export function lowerService(b: Block, lines: LineIndex, report: (code: DiagnosticCode, params: Params, span: Span) => void): LoweredService | undefined {
  const name = b.labels[0]?.value ?? '';
  const ctx = new Lowering(report, lines, name);
  if (!checkLabels(b, 1, 'service web { ... }', ctx)) return undefined;
  const out: Record<string, unknown> = { name };
  ctx.span([], headerSpan(b));
  ctx.span(['name'], b.labels[0]!.span);
  const seenBlocks = new Map<string, Span>();
  const where = `service ${name}`;
  const seen = ctx.fields(b.items, SERVICE_FIELDS, where, out, [], {
    blocks: BLOCKS,
    block: (nb) => lowerNested(nb, out, ctx, seenBlocks),
    statement: (it) => lowerStatement(it, out, ctx),
  });
  ctx.missing(seen, { image: 'image = "busybox:1.35"' }, where, headerSpan(b));
  return { name, input: out, spans: ctx.spans, header: headerSpan(b), failed: ctx.failed, failedPaths: ctx.failedPaths };
}

