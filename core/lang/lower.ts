import type { Params } from '../diagnostics/error.js';
import type { DiagnosticCode } from '../diagnostics/registry.js';
import { DEFAULTS } from '../model/defaults.js';
import { closest } from '../model/suggest.js';
import type { Block, Expr, Item, Label } from './ast.js';
import type { LineIndex, Span } from './source.js';
import * as v from './values.js';
import type { Conv, Reporter } from './values.js';

export type Path = (string | number)[];

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

interface FieldDef {
  conv: Conv;
  path: Path;
}

interface BlockDef {
  /** Label names in order; empty for unlabelled blocks. */
  labels: string[];
  fields: Record<string, FieldDef>;
  required: Record<string, string>;
  example: string;
  /** Where the block goes: a fixed path, or appended to an array. */
  into: (out: Record<string, unknown>, labels: string[]) => { path: Path; init: Record<string, unknown> };
  finish?: (obj: Record<string, unknown>, blockSpan: Span, ctx: Lowering) => Record<string, unknown> | undefined;
}

const f = (conv: Conv, ...path: Path): FieldDef => ({ conv, path });

const SERVICE_FIELDS: Record<string, FieldDef> = {
  image: f(v.str('image = "busybox:1.35"'), 'image'),
  command: f(v.listOf(v.str('"httpd"'), 'command = ["httpd", "-f"]'), 'command'),
  args: f(v.listOf(v.str('"-p"'), 'args = ["-p", "8080"]'), 'args'),
  env: f(v.textMap('env = { LOG_LEVEL = "info" }'), 'env'),
  workdir: f(v.str('workdir = "/srv"'), 'workdir'),
  labels: f(v.textMap('labels = { team = "web" }'), 'labels'),
  replicas: f(v.int, 'replicas'),
  cpu: f(v.cpu, 'resources', 'cpuMillis'),
  memory: f(v.bytes, 'resources', 'memoryBytes'),
  spread: f(v.oneOrList(v.choice(['zone', 'node']), 'spread = [zone, node]'), 'placement', 'spread'),
  after: f(v.oneOrList(v.word('after = ["db"]'), 'after = ["db"]'), 'after'),
  stop_grace: f(v.duration, 'stopGraceMs'),
  restart: f(v.choice(['always', 'on-failure', 'never']), 'restart'),
};

const appendTo =
  (field: string) =>
  (out: Record<string, unknown>, labels: string[]) => {
    const arr = (out[field] ??= []) as unknown[];
    return { path: [field, arr.length], init: labels[0] === undefined ? {} : { name: labels[0] } };
  };

function probeFinish(obj: Record<string, unknown>, span: Span, ctx: Lowering, kind: string): Record<string, unknown> | undefined {
  const { http, tcp, exec, port, ...rest } = obj;
  const probes = [http, tcp, exec].filter((p) => p !== undefined).length;
  if (probes !== 1) {
    ctx.report('CCA-E0312', { kind, count: probes }, span);
    return undefined;
  }
  const probe =
    http !== undefined
      ? { type: 'http', path: http, ...(port === undefined ? {} : { port }) }
      : tcp !== undefined
        ? { type: 'tcp', port: tcp }
        : { type: 'exec', command: exec, ...(port === undefined ? {} : { port }) };
  return { probe, ...rest };
}

const BLOCKS: Record<string, BlockDef> = {
  port: {
    labels: ['name'],
    fields: { container: f(v.int, 'container'), protocol: f(v.choice(['tcp', 'udp']), 'protocol') },
    required: { container: 'container = 8080' },
    example: 'port http { container = 8080 }',
    into: appendTo('ports'),
  },
  health: {
    labels: ['kind'],
    fields: {
      http: f(v.str('http = "/healthz"'), 'http'),
      tcp: f(v.portRef, 'tcp'),
      exec: f(v.listOf(v.str('"true"'), 'exec = ["cat", "/tmp/ready"]'), 'exec'),
      port: f(v.portRef, 'port'),
      every: f(v.duration, 'intervalMs'),
      timeout: f(v.duration, 'timeoutMs'),
      failures: f(v.int, 'failureThreshold'),
      delay: f(v.duration, 'initialDelayMs'),
    },
    required: {},
    example: 'health readiness { http = "/" every = 5s }',
    into: (_out, labels) => ({ path: ['health', labels[0] ?? ''], init: {} }),
    finish: (obj, span, ctx) => probeFinish(obj, span, ctx, String(ctx.currentLabel)),
  },
  update: {
    labels: [],
    fields: { max_surge: f(v.countOrPercent, 'maxSurge'), max_unavailable: f(v.countOrPercent, 'maxUnavailable') },
    required: {},
    example: 'update { max_surge = 1 max_unavailable = 0 }',
    into: () => ({ path: ['update'], init: {} }),
  },
  autoscale: {
    labels: [],
    fields: { min: f(v.int, 'min'), max: f(v.int, 'max'), target_cpu: f(v.percent, 'targetCpuPercent') },
    required: { max: 'max = 10' },
    example: 'autoscale { min = 2 max = 10 target_cpu = 70% }',
    into: () => ({ path: ['autoscale'], init: {} }),
  },
  init: {
    labels: ['name'],
    fields: {
      image: f(v.str('image = "busybox:1.35"'), 'image'),
      command: f(v.listOf(v.str('"sh"'), 'command = ["sh", "-c", "echo ok"]'), 'command'),
      env: f(v.textMap('env = { STEP = "1" }'), 'env'),
      timeout: f(v.duration, 'timeoutMs'),
    },
    required: { command: 'command = ["sh", "-c", "..."]' },
    example: 'init migrate { command = ["migrate", "up"] }',
    into: appendTo('init'),
  },
  config: {
    labels: ['name'],
    fields: { path: f(v.str('path = "/etc/app.conf"'), 'path'), content: f(v.str('content = "..."'), 'content'), mode: f(v.mode, 'mode') },
    required: { path: 'path = "/etc/app.conf"', content: 'content = """..."""' },
    example: 'config app { path = "/etc/app.conf" content = "key = value" }',
    into: appendTo('configs'),
  },
  secret: {
    labels: ['name'],
    fields: { value: f(v.str('value = "..."'), 'value'), path: f(v.str('path = "/run/secrets/db"'), 'path'), env: f(v.str('env = "DB_PASSWORD"'), 'env'), mode: f(v.mode, 'mode') },
    required: { value: 'value = "..."' },
    example: 'secret db { value = "s3cret" path = "/run/secrets/db" }',
    into: appendTo('secrets'),
  },
  volume: {
    labels: ['name'],
    fields: { size: f(v.bytes, 'sizeBytes'), mount: f(v.str('mount = "/data"'), 'mountPath'), read_only: f(v.bool, 'readOnly') },
    required: { size: 'size = 1Gi', mount: 'mount = "/data"' },
    example: 'volume data { size = 1Gi mount = "/data" }',
    into: appendTo('volumes'),
  },
};

const HEALTH_KINDS = ['liveness', 'readiness'];
const SELECTOR_BASES = ['zone', 'node', 'label'];
const STATEMENTS = ['require', 'restrict', 'prefer', 'accept', 'allow'];

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
class Lowering implements Reporter {
  readonly spans = new Map<string, Span>();
  readonly failedPaths: Path[] = [];
  failed = false;
  currentLabel: string | undefined;

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
  ctx.currentLabel = labels[0];
  const seen = ctx.fields(b.items, def.fields, where, obj, path);
  ctx.missing(seen, def.required, where, headerSpan(b));
  const done = def.finish ? def.finish(obj, headerSpan(b), ctx) : obj;
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

function constraintValues(e: Expr, op: string, ctx: Lowering): string[] | undefined {
  const one = (x: Expr): string | undefined => {
    if (x.kind === 'string') return x.value;
    if (x.kind === 'symbol') return x.name;
    if (x.kind === 'number') return x.text;
    if (x.kind !== 'error') ctx.report('CCA-E0217', { reason: `a constraint compares with text, not ${v.describeExpr(x)}` }, x.span);
    return undefined;
  };
  if (op === 'in' || op === 'not in') {
    if (e.kind !== 'list' || e.items.length === 0) {
      if (e.kind !== 'error') ctx.report('CCA-E0217', { reason: `\`${op}\` needs a non-empty [list] of values` }, e.span);
      return undefined;
    }
    const vals = e.items.map(one);
    return vals.every((x) => x !== undefined) ? (vals as string[]) : undefined;
  }
  if (e.kind === 'list') {
    ctx.report('CCA-E0217', { reason: `\`${op}\` compares with one value; use \`in\` for a list` }, e.span);
    return undefined;
  }
  const x = one(e);
  return x === undefined ? undefined : [x];
}

function lowerStatement(it: Item, out: Record<string, unknown>, ctx: Lowering): void {
  const placement = (out.placement ??= {}) as Record<string, unknown[]>;
  if (it.kind === 'rule') {
    const base = it.selector.base.value;
    if (!SELECTOR_BASES.includes(base)) {
      const near = closest(base, SELECTOR_BASES);
      ctx.report('CCA-E0217', { reason: `\`${base}\` is not an attribute${near ? `; did you mean \`${near}\`?` : ''}` }, it.selector.span);
      return;
    }
    if ((base === 'label') !== (it.selector.key !== undefined)) {
      ctx.report('CCA-E0217', { reason: base === 'label' ? 'write label.KEY, e.g. label.disk' : `\`${base}\` takes no key` }, it.selector.span);
      return;
    }
    const values = constraintValues(it.value, it.op, ctx);
    if (!values) return;
    const constraint = { attribute: it.selector.key ? `label.${it.selector.key.value}` : base, op: it.op, values };
    const list = (placement[it.keyword] ??= []);
    const path = ['placement', it.keyword, list.length];
    ctx.span(path, it.span);
    if (it.keyword === 'prefer') {
      const weight = it.weight === undefined ? DEFAULTS.preferWeight : v.int(it.weight, 'weight', ctx);
      if (weight === undefined) return;
      if (it.weight) ctx.span([...path, 'weight'], it.weight.span);
      list.push({ constraint, weight });
    } else list.push(constraint);
  } else if (it.kind === 'accept') {
    const taint = v.word('accept "gpu"')(it.value, 'accept', ctx);
    if (taint === undefined) return;
    const list = (placement.accept ??= []);
    ctx.span(['placement', 'accept', list.length], it.value.span);
    list.push(taint);
  } else if (it.kind === 'allow') {
    const network = (out.network ??= { allow: [] }) as { allow: unknown[] };
    const rule: Record<string, unknown> = { service: it.service.value };
    const path = ['network', 'allow', network.allow.length];
    ctx.span(path, it.span);
    ctx.span([...path, 'service'], it.service.span);
    if (it.port) {
      const port = v.portRef(it.port, 'port', ctx);
      if (port === undefined) return;
      rule.port = port;
      ctx.span([...path, 'port'], it.port.span);
    }
    network.allow.push(rule);
  }
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

/** Field names by block, for docs and "did you mean". */
export const FIELD_NAMES = {
  service: [...Object.keys(SERVICE_FIELDS), ...Object.keys(BLOCKS), ...STATEMENTS],
  ...Object.fromEntries(Object.entries(BLOCKS).map(([k, d]) => [k, Object.keys(d.fields)])),
} as Record<string, string[]>;
