import { formatBytes, formatCpu, formatDuration } from '../core/model/quantity.js';
import type { ServiceCounts } from '../core/model/status.js';
import { endpointsAnswer, nodesAnswer, replicasAnswer, serviceAnswer, servicesAnswer, volumesAnswer, type ApiNode, type ApiReplica, type ApiService, type ApiVolume } from './api.js';
import type { Client } from './client.js';
import { fail } from './exit.js';

/**
 * The stable `-o json` shapes of `cca get` (docs/cli.md): explicit fields, mapped from the
 * API's views, so a server adding fields never changes what scripts read.
 */
export interface ServiceItem extends ServiceCounts {
  name: string;
  image: string;
  /** Only for autoscaled services: bounds, target and the mean CPU utilisation now (null before any sample). */
  autoscale?: { min: number; max: number; targetCpuPercent: number; cpuPercent: number | null };
  /** The latest rolling update, or null when the service never rolled. */
  rollout: RolloutItem | null;
}

export interface RolloutItem {
  state: 'progressing' | 'complete' | 'stuck';
  fromRevision: number;
  toRevision: number;
  desired: number;
  newReady: number;
  newLive: number;
  oldLive: number;
  reason: string;
  /** It rolls to what the spec says now (not a roll an apply has since replaced). */
  current: boolean;
}

export interface ReplicaItem {
  name: string;
  service: string;
  node: string | null;
  state: string;
  desired: 'run' | 'stop';
  health: { liveness: string; readiness: string } | null;
  restarts: number;
  exitCode: number | null;
  /** The image digest the replica runs, as its node reports it. */
  image: string | null;
  reason: string;
}

export interface NodeItem {
  name: string;
  state: string;
  registered: boolean;
  zone: string;
  runtime: string;
  tenure: number;
  capacity: { cpuMillis: number; memoryBytes: number };
  used: { cpuMillis: number; memoryBytes: number };
  replicas: number;
  /** Replicas the node may hold (0: unknown, an older server or a node no longer registered). */
  replicaCap: number;
  labels: Record<string, string>;
  taints: string[];
  /** What the agent reports wrong with the node (`disk-full`, CCA-E0570): no new placements while any holds. */
  conditions: { kind: string; code: string; message: string }[];
}

/** One replica a load balancer may send traffic to (`/endpoints/<service>`, docs/endpoints.md). */
export interface EndpointItem {
  name: string;
  service: string;
  node: string;
  address: string;
  ports: Record<string, number>;
}

/** A local volume on a node: what the storage controller wants joined with what the agent reports (docs/volumes.md). */
export interface VolumeItem {
  node: string;
  service: string;
  volume: string;
  /**
   * ready, creating, failed (the agent's report); releasing (released, its data kept until
   * `deleteAt`); kept (an operator's hold); deleting (no longer wanted, the agent deletes
   * it); not reported.
   */
  state: string;
  deleteAt: number | null;
  deletesInMs: number | null;
  wanted: boolean;
  sizeBytes: number;
  usedBytes: number | null;
  path: string | null;
  /** The replica last placed on the node with this volume. */
  lastUser: string | null;
  diagnostic: { code: string; message: string } | null;
}

export type Kind = 'services' | 'replicas' | 'nodes' | 'endpoints' | 'volumes';
export type Item = ServiceItem | ReplicaItem | NodeItem | EndpointItem | VolumeItem;
export interface Listing<T extends Item = Item> {
  kind: Kind;
  revision: number;
  items: T[];
}

const service = (s: ApiService): ServiceItem => ({
  name: s.name,
  image: s.spec.image,
  desired: s.desired,
  replicas: s.replicas,
  placed: s.placed,
  running: s.running,
  ready: s.ready,
  updated: s.updated ?? s.replicas,
  pending: s.pending.map((p) => ({ replica: p.replica, reason: p.reason })),
  ...(s.autoscale ? { autoscale: { min: s.autoscale.min, max: s.autoscale.max, targetCpuPercent: s.autoscale.targetCpuPercent, cpuPercent: s.autoscale.cpuPercent ?? null } } : {}),
  rollout: s.rollout
    ? {
        state: s.rollout.state,
        fromRevision: s.rollout.fromRevision,
        toRevision: s.rollout.toRevision,
        desired: s.rollout.desired,
        newReady: s.rollout.newReady,
        newLive: s.rollout.newLive,
        oldLive: s.rollout.oldLive,
        reason: s.rollout.reason,
        current: s.rollout.current ?? true,
      }
    : null,
});

/** "3 (autoscaled 2–10, cpu 71%/60%)": the count the replica controller aims for, and why. */
export function scaleText(s: ServiceItem): string {
  if (!s.autoscale) return String(s.desired);
  const a = s.autoscale;
  return `${s.desired} (autoscaled ${a.min}–${a.max}, cpu ${a.cpuPercent === null ? '-' : `${a.cpuPercent}%`}/${a.targetCpuPercent}%)`;
}

/** One line for people: "rollout stuck: 2/3 new replicas not ready: …", progress, or complete. */
export function rolloutText(r: RolloutItem | null): string {
  if (!r) return '-';
  if (r.state === 'stuck') return `rollout stuck: ${r.reason}`;
  if (r.state === 'complete') return `rollout complete (revision ${r.fromRevision} → ${r.toRevision})`;
  return `rolling out revision ${r.toRevision}: ${r.newReady}/${r.desired} new ready, ${r.oldLive} old left`;
}

const replica = (r: ApiReplica): ReplicaItem => ({
  name: r.id,
  service: r.service,
  node: r.node ?? null,
  state: r.state,
  desired: r.desired,
  health: r.health ? { liveness: r.health.liveness, readiness: r.health.readiness } : null,
  restarts: r.restarts,
  exitCode: r.exitCode ?? null,
  image: r.image || null,
  reason: r.diagnostic ? `${r.diagnostic.code} ${r.diagnostic.message}` : r.reason,
});

const node = (n: ApiNode): NodeItem => ({
  name: n.name,
  state: n.state,
  registered: n.registered,
  zone: n.zone,
  runtime: n.runtime,
  tenure: n.tenure,
  capacity: { cpuMillis: n.capacity.cpuMillis, memoryBytes: n.capacity.memoryBytes },
  used: { cpuMillis: n.used.cpuMillis, memoryBytes: n.used.memoryBytes },
  replicas: n.replicas,
  replicaCap: n.capacity.replicas ?? 0,
  labels: n.labels,
  taints: n.taints,
  conditions: n.conditions.map((c) => ({ kind: c.kind, code: c.code, message: c.message })),
});

const volume = (v: ApiVolume): VolumeItem => ({
  node: v.node,
  service: v.service,
  volume: v.volume,
  state: v.state,
  wanted: v.wanted,
  sizeBytes: v.sizeBytes,
  usedBytes: v.usedBytes ?? null,
  path: v.path ?? null,
  lastUser: v.usedBy ?? null,
  deleteAt: v.deleteAt ?? null,
  deletesInMs: v.deletesInMs ?? null,
  diagnostic: v.diagnostic ? { code: v.diagnostic.code, message: v.diagnostic.message } : null,
});

/**
 * A measured byte count for people: exact when a unit divides it (as formatBytes), else
 * rounded to one decimal of the largest binary unit it reaches ("3.2Mi"); -o json is exact.
 */
export function roughBytes(bytes: number): string {
  const exact = formatBytes(bytes);
  if (!/^\d+$/.test(exact) || bytes < 1024) return exact;
  const units = ['Ki', 'Mi', 'Gi', 'Ti'] as const;
  let i = 0;
  let v = bytes / 1024;
  while (i < units.length - 1 && v >= 1024) {
    v /= 1024;
    i += 1;
  }
  // 1023.96Ki rounds to 1024.0: say the next unit instead.
  if (i < units.length - 1 && Math.round(v * 10) >= 10_240) return `1${units[i + 1]}`;
  return `${Number(v.toFixed(1))}${units[i]}`;
}

export async function list(client: Client, kind: Kind, name?: string, filter: { service?: string } = {}): Promise<Listing> {
  if (kind === 'endpoints') {
    // NAME is the service: its endpoints are one key, read and watched whole.
    const r = await client.json('GET', `/v1/services/${encodeURIComponent(name ?? '')}/endpoints`, endpointsAnswer);
    return { kind, revision: r.revision, items: r.endpoints.map((e) => ({ name: e.replica, service: r.service, node: e.node, address: e.address, ports: e.ports })) };
  }
  if (kind === 'volumes') {
    const r = await client.json('GET', `/v1/volumes${filter.service ? `?service=${encodeURIComponent(filter.service)}` : ''}`, volumesAnswer);
    return { kind, revision: r.revision, items: r.volumes.map(volume) };
  }
  if (kind === 'services') {
    if (name) {
      const r = await client.json('GET', `/v1/services/${encodeURIComponent(name)}`, serviceAnswer);
      return { kind, revision: r.revision, items: [service(r.service)] };
    }
    const r = await client.json('GET', '/v1/services', servicesAnswer);
    return { kind, revision: r.revision, items: r.services.map(service) };
  }
  const { revision, items } =
    kind === 'replicas'
      ? await client
          .json('GET', `/v1/replicas${filter.service ? `?service=${encodeURIComponent(filter.service)}` : ''}`, replicasAnswer)
          .then((r) => ({ revision: r.revision, items: r.replicas.map(replica) as (ReplicaItem | NodeItem)[] }))
      : await client.json('GET', '/v1/nodes', nodesAnswer).then((r) => ({ revision: r.revision, items: r.nodes.map(node) as (ReplicaItem | NodeItem)[] }));
  if (name === undefined) return { kind, revision, items };
  const one = items.filter((i) => i.name === name);
  if (one.length === 0) fail('CCA-E0609', { kind: kind.slice(0, -1), name });
  return { kind, revision, items: one };
}

const frac = (a: number, b: number) => `${a}/${b}`;

/** Rows for people: plain is what fits a terminal, wide adds what a diagnosis needs. */
export function tableOf(l: Listing, wide: boolean): { headers: string[]; rows: string[][] } {
  if (l.kind === 'services') {
    const items = l.items as ServiceItem[];
    // Optional columns appear only when a service autoscales / has rolled: other listings read as before.
    const scaled = items.some((s) => s.autoscale);
    const rolled = items.some((s) => s.rollout !== null);
    return {
      headers: ['NAME', 'READY', 'RUNNING', 'PLACED', 'PENDING', ...(scaled ? ['DESIRED'] : []), ...(wide ? ['IMAGE', 'WHY PENDING'] : []), ...(rolled ? ['ROLLOUT'] : [])],
      rows: items.map((s) => [
        s.name,
        frac(s.ready, s.desired),
        frac(s.running, s.desired),
        frac(s.placed, s.desired),
        String(s.pending.length),
        ...(scaled ? [scaleText(s)] : []),
        ...(wide ? [s.image, s.pending[0] ? `${s.pending[0].replica}: ${s.pending[0].reason}` : '-'] : []),
        ...(rolled ? [rolloutText(s.rollout)] : []),
      ]),
    };
  }
  if (l.kind === 'endpoints') {
    const items = l.items as EndpointItem[];
    const ports = (p: Record<string, number>) => Object.entries(p).sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, v]) => `${n}=${v}`).join(',') || '-';
    return {
      headers: ['NAME', 'NODE', 'ADDRESS', 'PORTS', ...(wide ? ['SERVICE'] : [])],
      rows: items.map((e) => [e.name, e.node, e.address, ports(e.ports), ...(wide ? [e.service] : [])]),
    };
  }
  if (l.kind === 'volumes') {
    const items = l.items as VolumeItem[];
    return {
      headers: ['NODE', 'SERVICE', 'VOLUME', 'SIZE', 'USED', 'STATE', ...(wide ? ['LAST USER', 'PATH'] : [])],
      rows: items.map((v) => [
        v.node,
        v.service,
        v.volume,
        formatBytes(v.sizeBytes),
        v.usedBytes === null ? '-' : roughBytes(v.usedBytes),
        // The code of a report's diagnostic (CCA-E0521: over its size); `cca explain` says more.
        volumeState(v),
        ...(wide ? [v.lastUser ?? '-', v.path ?? '-'] : []),
      ]),
    };
  }
  if (l.kind === 'replicas') {
    const items = l.items as ReplicaItem[];
    return {
      headers: ['NAME', 'SERVICE', 'NODE', 'STATE', 'RESTARTS', ...(wide ? ['DESIRED', 'HEALTH', 'EXIT', 'DIGEST', 'REASON'] : [])],
      rows: items.map((r) => [
        r.name,
        r.service,
        r.node ?? '-',
        r.state,
        String(r.restarts),
        ...(wide ? [r.desired, r.health ? `live=${r.health.liveness} ready=${r.health.readiness}` : '-', r.exitCode === null ? '-' : String(r.exitCode), r.image ?? '-', r.reason || '-'] : []),
      ]),
    };
  }
  const items = l.items as NodeItem[];
  return {
    headers: ['NAME', 'STATE', 'ZONE', 'CPU', 'MEMORY', 'REPLICAS', ...(wide ? ['RUNTIME', 'TENURE', 'LABELS', 'TAINTS'] : [])],
    rows: items.map((n) => [
      n.name,
      nodeState(n),
      n.zone || '-',
      `${formatCpu(n.used.cpuMillis)}/${formatCpu(n.capacity.cpuMillis)}`,
      `${formatBytes(n.used.memoryBytes)}/${formatBytes(n.capacity.memoryBytes)}`,
      n.replicaCap > 0 ? `${n.replicas}/${n.replicaCap}` : String(n.replicas),
      ...(wide
        ? [
            n.runtime || '-',
            String(n.tenure),
            Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(',') || '-',
            n.taints.join(',') || '-',
          ]
        : []),
    ]),
  };
}

/** "ready", "ready (disk full: CCA-E0570)", "lost (unregistered)". */
function nodeState(n: NodeItem): string {
  const notes = [...(n.registered ? [] : ['unregistered']), ...n.conditions.map((c) => `${c.kind.replace('-', ' ')}: ${c.code}`)];
  return notes.length > 0 ? `${n.state} (${notes.join(', ')})` : n.state;
}

/** "releasing (deleted in 23h)", "ready (CCA-E0521)": the state with what it waits for or carries. */
function volumeState(v: VolumeItem): string {
  const notes = [
    ...(v.deletesInMs !== null ? [`deleted in ${roughDuration(v.deletesInMs)}`] : []),
    // The code of a report's diagnostic (CCA-E0521: over its size); `cca explain` says more.
    ...(v.diagnostic ? [v.diagnostic.code] : []),
  ];
  return notes.length > 0 ? `${v.state} (${notes.join(', ')})` : v.state;
}

/** A time left for people: whole minutes from an hour up, whole seconds below (rounded up). */
export function roughDuration(ms: number): string {
  const step = ms >= 3_600_000 ? 60_000 : 1_000;
  return formatDuration(Math.ceil(ms / step) * step);
}

/** `-o name`: each item as KIND/NAME, the kind singular (a volume's name is its node, service and volume). */
export function nameLines(l: Listing): string[] {
  return l.items.map((i) => ('volume' in i ? `volume/${i.node}/${i.service}/${i.volume}` : `${l.kind.replace(/s$/, '')}/${i.name}`));
}
