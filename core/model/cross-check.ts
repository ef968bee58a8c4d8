import { formatDuration } from './quantity.js';
import type { SpecIssue } from './issues.js';
import type { HealthCheck, ServiceSpec } from './service-shape.js';

/** Rules that span several fields of one service. Each finding is a coded issue with a path. */
export function crossCheckService(s: ServiceSpec): SpecIssue[] {
  return [
    ...checkAutoscale(s),
    ...checkUpdate(s),
    ...checkPorts(s),
    ...checkHealth(s),
    ...checkNames(s),
    ...checkSecrets(s),
    ...checkPaths(s),
    ...checkAllow(s),
  ];
}

function checkAutoscale(s: ServiceSpec): SpecIssue[] {
  const a = s.autoscale;
  if (!a) return [];
  if (a.min > a.max) return [{ code: 'CCA-E0303', params: { min: a.min, max: a.max }, path: ['autoscale', 'min'] }];
  if (s.replicas < a.min || s.replicas > a.max) {
    return [{ code: 'CCA-E0304', params: { replicas: s.replicas, min: a.min, max: a.max }, path: ['replicas'] }];
  }
  return [];
}

/** Zero surge and zero unavailable would leave a roll no room to move (a percentage resolving to 0 at run time is lifted to 1 unavailable, as Kubernetes does). */
function checkUpdate(s: ServiceSpec): SpecIssue[] {
  const zero = (v: number | string) => v === 0 || v === '0%';
  const u = s.update;
  if (zero(u.maxSurge) && zero(u.maxUnavailable)) {
    return [{ code: 'CCA-E0318', params: { service: s.name, surge: String(u.maxSurge), unavailable: String(u.maxUnavailable) }, path: ['update', 'maxSurge'] }];
  }
  return [];
}

function checkPorts(s: ServiceSpec): SpecIssue[] {
  const out: SpecIssue[] = [];
  const byNumber = new Map<string, string>();
  for (const [i, p] of s.ports.entries()) {
    const key = `${p.protocol}/${p.container}`;
    const first = byNumber.get(key);
    if (first !== undefined) {
      out.push({
        code: 'CCA-E0307',
        params: { service: s.name, first, second: p.name, protocol: p.protocol, port: p.container },
        path: ['ports', i, 'container'],
      });
    } else byNumber.set(key, p.name);
  }
  return out;
}

function declaredPorts(s: ServiceSpec): string {
  return s.ports.length === 0 ? 'no ports' : `ports ${s.ports.map((p) => `${p.name} (${p.container})`).join(', ')}`;
}

function unknownPort(s: ServiceSpec, where: string, port: string, path: SpecIssue['path']): SpecIssue {
  const hint = s.ports.length === 0 ? 'declare it with port NAME { container = NUMBER }' : `use one of: ${s.ports.map((p) => p.name).join(', ')}, or a port number`;
  return { code: 'CCA-E0310', params: { where, port, service: s.name, declared: declaredPorts(s), hint }, path };
}

function checkHealth(s: ServiceSpec): SpecIssue[] {
  const out: SpecIssue[] = [];
  for (const kind of ['liveness', 'readiness'] as const) {
    const h: HealthCheck | undefined = s.health[kind];
    if (!h) continue;
    const path = ['health', kind];
    if (h.probe.type !== 'exec') {
      const port = h.probe.port;
      if (port === undefined) out.push(unknownPort(s, `the ${kind} health check`, '(first port)', [...path, 'probe']));
      else if (typeof port === 'string' && !s.ports.some((p) => p.name === port)) {
        out.push(unknownPort(s, `the ${kind} health check`, port, [...path, 'probe', 'port']));
      }
    }
    if (h.timeoutMs >= h.intervalMs) {
      out.push({
        code: 'CCA-E0314',
        params: { kind, timeout: formatDuration(h.timeoutMs), interval: formatDuration(h.intervalMs) },
        path: [...path, 'timeoutMs'],
      });
    }
  }
  return out;
}

function duplicates(s: ServiceSpec, what: string, field: string, items: readonly { name: string }[]): SpecIssue[] {
  const seen = new Set<string>();
  const out: SpecIssue[] = [];
  for (const [i, it] of items.entries()) {
    if (seen.has(it.name)) out.push({ code: 'CCA-E0308', params: { service: s.name, what, name: it.name }, path: [field, i, 'name'] });
    seen.add(it.name);
  }
  return out;
}

function checkNames(s: ServiceSpec): SpecIssue[] {
  return [
    ...duplicates(s, 'port', 'ports', s.ports),
    ...duplicates(s, 'init', 'init', s.init),
    ...duplicates(s, 'config', 'configs', s.configs),
    ...duplicates(s, 'secret', 'secrets', s.secrets),
    ...duplicates(s, 'volume', 'volumes', s.volumes),
  ];
}

function checkSecrets(s: ServiceSpec): SpecIssue[] {
  const pullSecret = s.pull?.secret;
  // The registry credentials are one of the service's own secrets (it needs no path or env then).
  const missingPull: SpecIssue[] =
    pullSecret !== undefined && !s.secrets.some((sec) => sec.name === pullSecret) ? [{ code: 'CCA-E0556', params: { secret: pullSecret, service: s.name }, path: ['pull', 'secret'] }] : [];
  return missingPull.concat(s.secrets.flatMap((sec, i): SpecIssue[] =>
    sec.path === undefined && sec.env === undefined && sec.name !== pullSecret
      ? [{ code: 'CCA-E0315', params: { name: sec.name, service: s.name }, path: ['secrets', i] }]
      : [],
  ));
}

function checkPaths(s: ServiceSpec): SpecIssue[] {
  const users: { what: string; path: string; at: SpecIssue['path'] }[] = [
    ...s.configs.map((c, i) => ({ what: `config ${c.name}`, path: c.path, at: ['configs', i, 'path'] })),
    ...s.secrets.flatMap((c, i) => (c.path === undefined ? [] : [{ what: `secret ${c.name}`, path: c.path, at: ['secrets', i, 'path'] }])),
    ...s.volumes.map((v, i) => ({ what: `volume ${v.name}`, path: v.mountPath, at: ['volumes', i, 'mountPath'] })),
  ];
  const seen = new Map<string, string>();
  const out: SpecIssue[] = [];
  for (const u of users) {
    const first = seen.get(u.path);
    if (first !== undefined) out.push({ code: 'CCA-E0313', params: { service: s.name, first, second: u.what, path: u.path }, path: u.at });
    else seen.set(u.path, u.what);
  }
  return out;
}

function checkAllow(s: ServiceSpec): SpecIssue[] {
  return s.network.allow.flatMap((rule, i): SpecIssue[] =>
    typeof rule.port === 'string' && !s.ports.some((p) => p.name === rule.port)
      ? [unknownPort(s, `allow from service ${rule.service}`, rule.port, ['network', 'allow', i, 'port'])]
      : [],
  );
}
