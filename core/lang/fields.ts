/**
 * What may appear where in a service: each field's converter and spec path, each block's
 * labels, fields and required entries. Lowering walks the syntax tree against these tables;
 * the docs test checks docs/language.md mentions every name listed here.
 */
import type { Span } from './source.js';
import * as v from './values.js';
import type { Conv, Reporter } from './values.js';

export type Path = (string | number)[];

export interface FieldDef {
  conv: Conv;
  path: Path;
}

export interface BlockDef {
  /** Label names in order; empty for unlabelled blocks. */
  labels: string[];
  fields: Record<string, FieldDef>;
  required: Record<string, string>;
  example: string;
  /** Where the block goes: a fixed path, or appended to an array. */
  into: (out: Record<string, unknown>, labels: string[]) => { path: Path; init: Record<string, unknown> };
  /**
   * Reshape the lowered fields (or report and return undefined). `written` holds every
   * field present in the source, including those whose value failed to lower.
   */
  finish?: (obj: Record<string, unknown>, blockSpan: Span, r: Reporter, label: string, written: ReadonlySet<string>) => Record<string, unknown> | undefined;
}

const f = (conv: Conv, ...path: Path): FieldDef => ({ conv, path });

export const SERVICE_FIELDS: Record<string, FieldDef> = {
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

function probeFinish(obj: Record<string, unknown>, span: Span, r: Reporter, kind: string, written: ReadonlySet<string>): Record<string, unknown> | undefined {
  const { http, tcp, exec, port, ...rest } = obj;
  // Count probes as written, so a probe whose value was wrong is not also "missing".
  const probes = ['http', 'tcp', 'exec'].filter((p) => written.has(p)).length;
  if (probes !== 1) {
    r.report('CCA-E0312', { kind, count: probes }, span);
    return undefined;
  }
  if (http === undefined && tcp === undefined && exec === undefined) return undefined;
  const probe =
    http !== undefined
      ? { type: 'http', path: http, ...(port === undefined ? {} : { port }) }
      : tcp !== undefined
        ? { type: 'tcp', port: tcp }
        : { type: 'exec', command: exec, ...(port === undefined ? {} : { port }) };
  return { probe, ...rest };
}

export const BLOCKS: Record<string, BlockDef> = {
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
    finish: probeFinish,
  },
  update: {
    labels: [],
    fields: { max_surge: f(v.countOrPercent, 'maxSurge'), max_unavailable: f(v.countOrPercent, 'maxUnavailable'), progress_deadline: f(v.duration, 'progressDeadlineMs') },
    required: {},
    example: 'update { max_surge = 1 max_unavailable = 0 }',
    into: () => ({ path: ['update'], init: {} }),
  },
  pull: {
    labels: [],
    fields: { policy: f(v.choice(['if-missing', 'always']), 'policy'), secret: f(v.word('secret = "regcred"'), 'secret') },
    required: {},
    example: 'pull { policy = always secret = "regcred" }',
    into: () => ({ path: ['pull'], init: {} }),
  },
  autoscale: {
    labels: [],
    fields: { min: f(v.int, 'min'), max: f(v.int, 'max'), target_cpu: f(v.percent, 'targetCpuPercent'), scale_down_window: f(v.duration, 'scaleDownWindowMs') },
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
    fields: { size: f(v.bytes, 'sizeBytes'), mount: f(v.str('mount = "/data"'), 'mountPath'), read_only: f(v.bool, 'readOnly'), keep_for: f(v.duration, 'keepForMs') },
    required: { size: 'size = 1Gi', mount: 'mount = "/data"' },
    example: 'volume data { size = 1Gi mount = "/data" }',
    into: appendTo('volumes'),
  },
};

export const HEALTH_KINDS = ['liveness', 'readiness'];
export const SELECTOR_BASES = ['zone', 'node', 'label'];
export const STATEMENTS = ['require', 'restrict', 'prefer', 'accept', 'allow'];

/** Field names by block, for docs and "did you mean". */
export const FIELD_NAMES = {
  service: [...Object.keys(SERVICE_FIELDS), ...Object.keys(BLOCKS), ...STATEMENTS],
  ...Object.fromEntries(Object.entries(BLOCKS).map(([k, d]) => [k, Object.keys(d.fields)])),
} as Record<string, string[]>;
