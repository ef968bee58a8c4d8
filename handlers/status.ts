import { desiredReplicas, type Assignment, type NodeStatus, type Observation, type ReplicaRecord, type ServiceSpec } from '../core/model/index.js';
import type { Store } from '../db/store.js';
import { listFacts } from './facts.js';
import { decodeFact, prefixOf } from '../core/keys.js';

export interface ReplicaView {
  id: string;
  service: string;
  desired: ReplicaRecord['desired'];
  retired: boolean;
  node?: string;
  /** What the agent last reported, when the report is admissible (current tenure of the node it is placed on). */
  state: Observation['state'] | 'unplaced';
  health?: Observation['health'];
  restarts: number;
  exitCode?: number;
  createdAt: number;
  reason: string;
  diagnostic?: Observation['diagnostic'];
  /** Init step progress (the failed step's exit code and output tail). */
  init?: Observation['init'];
  /** Backoff: consecutive failures it replaces, and the earliest time it may be placed. */
  attempt: number;
  notBefore?: number;
}

export interface ServiceStatus {
  name: string;
  spec: ServiceSpec;
  desired: number;
  replicas: number;
  placed: number;
  running: number;
  ready: number;
  pending: { replica: string; reason: string }[];
}

/**
 * Replicas joined with their placement and the agent's admissible observation, all read
 * at one revision so the picture is consistent.
 */
export async function replicaViews(store: Store, service?: string, revision = 0): Promise<{ revision: number; replicas: ReplicaView[] }> {
  const replicas = await listFacts(store, 'replica', service ? [service] : [], revision);
  const at = replicas.revision;
  const [assigned, observed] = await Promise.all([listFacts(store, 'assigned', [], at), listFacts(store, 'observed', [], at)]);
  const placement = new Map<string, Assignment>(assigned.facts.map((f) => [f.value.replica, f.value]));
  const seen = new Map<string, Observation>(observed.facts.map((f) => [`${f.value.node}/${f.value.replica}`, f.value]));
  return {
    revision: at,
    replicas: replicas.facts.map(({ value: r }) => {
      const a = placement.get(r.id);
      const o = a ? seen.get(`${a.node}/${r.id}`) : undefined;
      const admissible = o && a && o.tenure === a.tenure ? o : undefined;
      const view: ReplicaView = {
        id: r.id,
        service: r.service,
        desired: r.desired,
        retired: r.retired,
        state: admissible?.state ?? (a ? 'pending' : 'unplaced'),
        restarts: admissible?.restarts ?? 0,
        createdAt: r.createdAt,
        reason: r.reason,
        attempt: r.attempt ?? 0,
        ...(r.notBefore !== undefined ? { notBefore: r.notBefore } : {}),
      };
      if (a) view.node = a.node;
      if (admissible?.health) view.health = admissible.health;
      if (admissible?.exitCode !== undefined) view.exitCode = admissible.exitCode;
      if (admissible?.diagnostic) view.diagnostic = admissible.diagnostic;
      if (admissible?.init) view.init = admissible.init;
      return view;
    }),
  };
}

/** At most this many pending replicas per service get their scheduler reason looked up. */
const PENDING_REASONS = 20;

/** The newest decision about a replica, at one revision: for a pending one, the scheduler's shortfall. */
async function latestReason(store: Store, replica: string, revision: number): Promise<string | undefined> {
  const r = await store.range({ prefix: prefixOf('decision', 'replica', replica), reverse: true, limit: 1, revision });
  const kv = r.kvs[0];
  if (!kv) return undefined;
  const d = decodeFact('decision', kv.key, kv.value);
  return d.reasons.length > 0 ? d.reasons.join('; ') : d.action;
}

export async function serviceStatuses(store: Store, only?: string): Promise<{ revision: number; services: ServiceStatus[] }> {
  const services = await listFacts(store, 'service');
  const at = services.revision;
  const [{ replicas }, intents] = await Promise.all([replicaViews(store, only, at), listFacts(store, 'autoscale', [], at)]);
  const intent = new Map(intents.facts.map((f) => [f.value.service, f.value]));
  const unplaced = new Map<string, string>();
  const byService = new Map<string, number>();
  await Promise.all(
    replicas
      .filter((r) => !r.retired && r.desired === 'run' && r.node === undefined)
      .filter((r) => {
        const n = byService.get(r.service) ?? 0;
        byService.set(r.service, n + 1);
        return n < PENDING_REASONS;
      })
      .map(async (r) => {
        const reason = await latestReason(store, r.id, at);
        if (reason) unplaced.set(r.id, reason);
      }),
  );
  return {
    revision: at,
    services: services.facts
      .filter((f) => only === undefined || f.value.name === only)
      .map(({ value: spec }) => {
        const mine = replicas.filter((r) => r.service === spec.name && !r.retired && r.desired === 'run');
        const readinessChecked = spec.health.readiness !== undefined;
        return {
          name: spec.name,
          spec,
          desired: desiredReplicas(spec, intent.get(spec.name)?.desired),
          replicas: mine.length,
          placed: mine.filter((r) => r.node !== undefined).length,
          running: mine.filter((r) => r.state === 'running').length,
          ready: mine.filter((r) => r.state === 'running' && (!readinessChecked || r.health?.readiness === 'passing')).length,
          pending: mine
            .filter((r) => r.node === undefined || r.diagnostic !== undefined)
            .map((r) => ({
              replica: r.id,
              reason: r.diagnostic ? `${r.diagnostic.code} ${r.diagnostic.message}` : unplaced.get(r.id) ?? (r.reason || 'not placed yet'),
            })),
        };
      }),
  };
}

export interface NodeView {
  name: string;
  zone: string;
  labels: Record<string, string>;
  taints: string[];
  capacity: { cpuMillis: number; memoryBytes: number };
  used: { cpuMillis: number; memoryBytes: number };
  replicas: number;
  tenure: number;
  /** Registered now (its lease is alive): the node record exists. */
  registered: boolean;
  state: NodeStatus['state'] | 'unknown';
  runtime: string;
}

export async function nodeViews(store: Store): Promise<{ revision: number; nodes: NodeView[] }> {
  const nodes = await listFacts(store, 'node');
  const at = nodes.revision;
  const [statuses, allocations] = await Promise.all([listFacts(store, 'nodeStatus', [], at), listFacts(store, 'allocation', [], at)]);
  const status = new Map(statuses.facts.map((f) => [f.value.node, f.value]));
  const alloc = new Map(allocations.facts.map((f) => [f.value.node, f.value]));
  const names = new Set([...nodes.facts.map((f) => f.value.name), ...status.keys()]);
  const record = new Map(nodes.facts.map((f) => [f.value.name, f]));
  return {
    revision: at,
    nodes: [...names].sort().map((name) => {
      const r = record.get(name);
      const s = status.get(name);
      const a = alloc.get(name);
      return {
        name,
        zone: r?.value.zone ?? '',
        labels: r?.value.labels ?? {},
        taints: r?.value.taints ?? [],
        capacity: r?.value.capacity ?? { cpuMillis: 0, memoryBytes: 0 },
        used: a?.used ?? { cpuMillis: 0, memoryBytes: 0 },
        replicas: a?.replicas.length ?? 0,
        tenure: r?.createRevision ?? s?.tenure ?? 0,
        registered: r !== undefined,
        state: s && r && s.tenure === r.createRevision ? s.state : s?.state === 'lost' ? 'lost' : 'unknown',
        runtime: r?.value.runtime ?? '',
      };
    }),
  };
}
