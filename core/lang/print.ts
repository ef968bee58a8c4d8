import type { Constraint } from '../model/constraints.js';
import { DEFAULTS } from '../model/defaults.js';
import { formatBytes, formatCpu, formatDuration } from '../model/quantity.js';
import { redactSpec } from '../redact.js';
import type { HealthCheck, ServiceSpec } from '../model/service.js';
import { format } from './format.js';
import { labelText, quote } from './quote.js';

export interface ToCcaOptions {
  /** 'redact' (default) prints every secret value as (redacted); 'include' is for round trips only. */
  secrets?: 'redact' | 'include';
}

const list = (xs: readonly string[]) => `[${xs.map(quote).join(', ')}]`;
const map = (m: Readonly<Record<string, string>>) => `{ ${Object.entries(m).map(([k, v]) => `${labelText(k, false)} = ${quote(v)}`).join(', ')} }`;
const portRef = (p: number | string) => (typeof p === 'number' ? String(p) : labelText(p, false));
const countOrPercent = (v: number | string) => String(v);
const mode = (m: number) => quote(`0${m.toString(8).padStart(3, '0')}`);

/** Spec → canonical `.cca` text. Fields equal to their default are left out; parsing it back gives the same spec. */
export function toCca(spec: ServiceSpec, opts: ToCcaOptions = {}): string {
  return toCcaAll([spec], opts);
}

export function toCcaAll(specs: readonly ServiceSpec[], opts: ToCcaOptions = {}): string {
  return format(specs.map((s) => serviceText(opts.secrets === 'include' ? s : redactSpec(s))).join('\n'));
}

function serviceText(s: ServiceSpec): string {
  const l: string[] = [`service ${s.name} {`, `image = ${quote(s.image)}`];
  if (s.command.length > 0) l.push(`command = ${list(s.command)}`);
  if (s.args.length > 0) l.push(`args = ${list(s.args)}`);
  if (s.workdir !== undefined) l.push(`workdir = ${quote(s.workdir)}`);
  if (Object.keys(s.env).length > 0) l.push(`env = ${map(s.env)}`);
  if (Object.keys(s.labels).length > 0) l.push(`labels = ${map(s.labels)}`);
  if (s.replicas !== (s.autoscale?.min ?? DEFAULTS.replicas)) l.push(`replicas = ${s.replicas}`);
  if (s.resources.cpuMillis !== DEFAULTS.cpuMillis) l.push(`cpu = ${formatCpu(s.resources.cpuMillis)}`);
  if (s.resources.memoryBytes !== DEFAULTS.memoryBytes) l.push(`memory = ${formatBytes(s.resources.memoryBytes)}`);
  if (s.restart !== DEFAULTS.restart) l.push(`restart = ${s.restart}`);
  if (s.stopGraceMs !== DEFAULTS.stopGraceMs) l.push(`stop_grace = ${formatDuration(s.stopGraceMs)}`);
  if (s.after.length > 0) l.push(`after = ${list(s.after)}`);
  if (s.placement.spread.join() !== DEFAULTS.spread.join()) l.push(`spread = [${s.placement.spread.join(', ')}]`);
  for (const p of s.ports) {
    l.push(`port ${p.name} { container = ${p.container}${p.protocol !== DEFAULTS.portProtocol ? ` protocol = ${p.protocol}` : ''} }`);
  }
  for (const kind of ['liveness', 'readiness'] as const) {
    const h = s.health[kind];
    if (h) l.push(healthText(kind, h, s.ports[0]?.name));
  }
  const u = s.update;
  if (u.maxSurge !== DEFAULTS.maxSurge || u.maxUnavailable !== DEFAULTS.maxUnavailable || u.progressDeadlineMs !== DEFAULTS.progressDeadlineMs) {
    const deadline = u.progressDeadlineMs !== DEFAULTS.progressDeadlineMs ? ` progress_deadline = ${formatDuration(u.progressDeadlineMs)}` : '';
    l.push(`update { max_surge = ${countOrPercent(u.maxSurge)} max_unavailable = ${countOrPercent(u.maxUnavailable)}${deadline} }`);
  }
  if (s.pull) l.push(`pull { policy = ${s.pull.policy}${s.pull.secret === undefined ? '' : ` secret = ${quote(s.pull.secret)}`} }`);
  if (s.autoscale) {
    const w = s.autoscale.scaleDownWindowMs === undefined ? '' : ` scale_down_window = ${formatDuration(s.autoscale.scaleDownWindowMs)}`;
    l.push(`autoscale { min = ${s.autoscale.min} max = ${s.autoscale.max} target_cpu = ${s.autoscale.targetCpuPercent}%${w} }`);
  }
  for (const i of s.init) {
    const f = [`command = ${list(i.command)}`];
    if (i.image !== undefined) f.unshift(`image = ${quote(i.image)}`);
    if (Object.keys(i.env).length > 0) f.push(`env = ${map(i.env)}`);
    if (i.timeoutMs !== DEFAULTS.initTimeoutMs) f.push(`timeout = ${formatDuration(i.timeoutMs)}`);
    l.push(`init ${i.name} {`, ...f, '}');
  }
  for (const c of s.configs) {
    l.push(`config ${c.name} {`, `path = ${quote(c.path)}`, `content = ${quote(c.content)}`);
    if (c.mode !== DEFAULTS.configMode) l.push(`mode = ${mode(c.mode)}`);
    l.push('}');
  }
  for (const c of s.secrets) {
    l.push(`secret ${c.name} {`, `value = ${quote(c.value)}`);
    if (c.path !== undefined) l.push(`path = ${quote(c.path)}`);
    if (c.env !== undefined) l.push(`env = ${quote(c.env)}`);
    if (c.mode !== DEFAULTS.secretMode) l.push(`mode = ${mode(c.mode)}`);
    l.push('}');
  }
  for (const v of s.volumes) {
    const keep = v.keepForMs !== DEFAULTS.volumeKeepForMs ? ` keep_for = ${formatDuration(v.keepForMs)}` : '';
    l.push(`volume ${v.name} { size = ${formatBytes(v.sizeBytes)} mount = ${quote(v.mountPath)}${v.readOnly ? ' read_only = true' : ''}${keep} }`);
  }
  for (const c of s.placement.require) l.push(`require ${constraint(c)}`);
  for (const c of s.placement.restrict) l.push(`restrict ${constraint(c)}`);
  for (const p of s.placement.prefer) l.push(`prefer ${constraint(p.constraint)} weight ${p.weight}`);
  for (const a of s.placement.accept) l.push(`accept ${quote(a)}`);
  for (const a of s.network.allow) l.push(`allow from service ${a.service}${a.port === undefined ? '' : ` on port ${portRef(a.port)}`}`);
  l.push('}');
  return l.join('\n');
}

function healthText(kind: string, h: HealthCheck, firstPort: string | undefined): string {
  const f: string[] = [];
  const p = h.probe;
  if (p.type === 'http') {
    f.push(`http = ${quote(p.path)}`);
    if (p.port !== undefined && p.port !== firstPort) f.push(`port = ${portRef(p.port)}`);
  } else if (p.type === 'tcp') f.push(`tcp = ${portRef(p.port ?? firstPort ?? 0)}`);
  else f.push(`exec = ${list(p.command)}`);
  if (h.intervalMs !== DEFAULTS.healthIntervalMs) f.push(`every = ${formatDuration(h.intervalMs)}`);
  if (h.timeoutMs !== DEFAULTS.healthTimeoutMs) f.push(`timeout = ${formatDuration(h.timeoutMs)}`);
  if (h.failureThreshold !== DEFAULTS.healthFailureThreshold) f.push(`failures = ${h.failureThreshold}`);
  if (h.initialDelayMs !== DEFAULTS.healthInitialDelayMs) f.push(`delay = ${formatDuration(h.initialDelayMs)}`);
  return [`health ${kind} {`, ...f, '}'].join('\n');
}

/** `zone in ["a", "b"]` with .cca quoting; a label key that is not one word is quoted too. */
function constraint(c: Constraint): string {
  const attr = c.attribute.startsWith('label.') ? `label.${labelText(c.attribute.slice('label.'.length), false)}` : c.attribute;
  const value = c.op === 'in' || c.op === 'not in' ? list(c.values) : quote(c.values[0] ?? '');
  return `${attr} ${c.op} ${value}`;
}
