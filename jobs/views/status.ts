import { desiredReplicas, meanUtilisation, replicaReason, runsTemplate, templateHash, type Allocation, type Assignment, type NodeCondition, type NodeRecord, type NodeStatus, type Observation, type ReplicaOutcome, type ReplicaRecord, type Rollout, type ServiceSpec } from '../../core/model/index.js';
import type { ServiceCounts } from '../../core/model/status.js';
import type { Store } from '../../db/store.js';
import { readFacts } from '../facts.js';
import { decodeFact, prefixOf } from '../../core/keys.js';

// The status views the API answers with and the console renders (over the live mirror or the
// simulation's store): browser-safe, so both compute the same numbers from the same code.

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
  /** Rendered from the record's typed fields (core/model/replica-outcome.ts). */
  reason: string;
  /** How it ended, once retired. */
  outcome?: ReplicaOutcome;
  diagnostic?: Observation['diagnostic'];
  /** The last reported CPU use against the replica's request (running replicas with a sample). */
  cpu?: { usedMillis: number; requestedMillis: number };
  /** Init step progress (the failed step's exit code and output tail). */
  init?: Observation['init'];
  /** The image digest the node reports running (the manifest a tag resolved to when it pulled). */
  image?: string;
  /** While pulling: the attempt and the bytes fetched so far, when known. */
  pull?: Observation['pull'];
  /** Backoff: consecutive failures it replaces, and the earliest time it may be placed. */
  attempt: number;
  notBefore?: number;
}

export interface ServiceStatus extends ServiceCounts {
  name: string;
  spec: ServiceSpec;
  /** For autoscaled services: the bounds, the target, and the mean CPU utilisation now (percent of request). */
  autoscale?: { min: number; max: number; targetCpuPercent: number; cpuPercent?: number };
  /** The service's latest rolling update, when it had one (docs/rollouts.md). */
  rollout?: Pick<Rollout, 'state' | 'fromRevision' | 'toRevision' | 'startedAt' | 'reason' | 'desired' | 'newReady' | 'newLive' | 'oldLive'> & {
    finishedAt?: number;
    /** It rolls to the spec's current template (false right after an apply changed it again, e.g. a rollback). */
    current: boolean;
  };
}

/**
 * Replicas joined with their placement and the agent's admissible observation, all read
 * at one revision so the picture is consistent.
 */
export async function replicaViews(
  store: Store,
  service?: string,
  revision = 0,
): Promise<{ revision: number; replicas: ReplicaView[]; templates: Map<string, { recorded: string; placed?: ServiceSpec }> }> {
  const replicas = await readFacts(store, 'replica', service ? [service] : [], revision);
  const at = replicas.revision;
  const [assigned, observed, nodes, lost] = await Promise.all([readFacts(store, 'assigned', [], at), readFacts(store, 'observed', [], at), readFacts(store, 'node', [], at), readFacts(store, 'lost', [], at)]);
  const tenures = new Map(nodes.facts.map((n) => [n.value.name, n.kv.createRevision]));
  const declaredLost = new Set(lost.facts.map((l) => l.value.replica));
  const placement = new Map<string, Assignment>(assigned.facts.map((f) => [f.value.replica, f.value]));
  const seen = new Map<string, Observation>(observed.facts.map((f) => [`${f.value.node}/${f.value.replica}`, f.value]));
  // What each replica was made from and runs, for rollouts (kept out of the views' JSON).
  const templates = new Map(replicas.facts.map(({ value: r }) => [r.id, { recorded: r.template, ...(placement.get(r.id) ? { placed: placement.get(r.id)!.spec } : {}) }]));
  return {
    revision: at,
    templates,
    replicas: replicas.facts.map(({ value: r }) => {
      const a = placement.get(r.id);
      return replicaView(r, a, a ? seen.get(`${a.node}/${r.id}`) : undefined, { nodeTenure: a ? tenures.get(a.node) : undefined, declaredLost: declaredLost.has(r.id) });
    }),
  };
}

/**
 * One replica's view from its record, its placement (if any) and the observation reported
 * for it by the node it is placed on (if any): pure, so the console's cluster map derives
 * each replica it updates from a watch batch exactly as the API does for a listing.
 * `nodeTenure`: the current tenure of the assignment's node; `declaredLost`: a `/lost/` record exists.
 */
export function replicaView(r: ReplicaRecord, a: Assignment | undefined, o: Observation | undefined, node: { nodeTenure: number | undefined; declaredLost: boolean }): ReplicaView {
  const admissible = o && a && o.tenure === a.tenure ? o : undefined;
  const view: ReplicaView = {
    id: r.id,
    service: r.service,
    desired: r.desired,
    retired: r.retired,
    state: admissible?.state ?? (a ? 'pending' : 'unplaced'),
    restarts: admissible?.restarts ?? 0,
    createdAt: r.createdAt,
    reason: replicaReason(r),
    ...(r.ended ? { outcome: r.ended.outcome } : {}),
    attempt: r.attempt ?? 0,
    ...(r.notBefore !== undefined ? { notBefore: r.notBefore } : {}),
  };
  if (a) view.node = a.node;
  // A stateful replica of a past tenure, not yet proven stopped (docs/volumes.md).
  if (a && a.spec.volumes.length > 0 && a.desired === 'run' && node.nodeTenure !== a.tenure && !node.declaredLost) {
    view.reason = `waiting for fencing proof of node ${a.node} (cca fence node ${a.node} --confirm, or its return)`;
  }
  if (admissible?.health) view.health = admissible.health;
  if (admissible?.exitCode !== undefined) view.exitCode = admissible.exitCode;
  if (admissible?.diagnostic) view.diagnostic = admissible.diagnostic;
  if (a && admissible?.state === 'running' && admissible.usage) view.cpu = { usedMillis: admissible.usage.cpuMillis, requestedMillis: a.resources.cpuMillis };
  if (admissible?.init) view.init = admissible.init;
  if (admissible?.image) view.image = admissible.image;
  if (admissible?.pull) view.pull = admissible.pull;
  return view;
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
  const services = await readFacts(store, 'service');
  const at = services.revision;
  const [{ replicas, templates }, intents, rollouts] = await Promise.all([replicaViews(store, only, at), readFacts(store, 'autoscale', [], at), readFacts(store, 'rollout', [], at)]);
  const intent = new Map(intents.facts.map((f) => [f.value.service, f.value]));
  const rollout = new Map(rollouts.facts.map((f) => [f.value.service, f.value]));
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
        const cpu = meanUtilisation(mine.flatMap((r) => (r.cpu ? [{ replica: r.id, ...r.cpu }] : [])));
        const autoscale = spec.autoscale && {
          min: spec.autoscale.min,
          max: spec.autoscale.max,
          targetCpuPercent: spec.autoscale.targetCpuPercent,
          ...(cpu !== undefined ? { cpuPercent: Math.round(cpu * 100) } : {}),
        };
        const template = templateHash(spec);
        const ro = rollout.get(spec.name);
        return {
          name: spec.name,
          spec,
          desired: desiredReplicas(spec, intent.get(spec.name)?.desired),
          replicas: mine.length,
          placed: mine.filter((r) => r.node !== undefined).length,
          running: mine.filter((r) => r.state === 'running').length,
          ready: mine.filter((r) => r.state === 'running' && (!readinessChecked || r.health?.readiness === 'passing')).length,
          updated: mine.filter((r) => {
            const t = templates.get(r.id);
            return !t || runsTemplate(t.recorded, t.placed, template);
          }).length,
          ...(ro
            ? {
                rollout: {
                  state: ro.state,
                  fromRevision: ro.fromRevision,
                  toRevision: ro.toRevision,
                  startedAt: ro.startedAt,
                  reason: ro.reason,
                  desired: ro.desired,
                  newReady: ro.newReady,
                  newLive: ro.newLive,
                  oldLive: ro.oldLive,
                  current: ro.toTemplate === template,
                  ...(ro.finishedAt !== undefined ? { finishedAt: ro.finishedAt } : {}),
                },
              }
            : {}),
          pending: mine
            .filter((r) => r.node === undefined || r.diagnostic !== undefined)
            .map((r) => ({
              replica: r.id,
              reason: r.diagnostic ? `${r.diagnostic.code} ${r.diagnostic.message}` : unplaced.get(r.id) ?? (r.reason || 'not placed yet'),
            })),
          ...(autoscale ? { autoscale } : {}),
        };
      }),
  };
}

export interface NodeView {
  name: string;
  zone: string;
  labels: Record<string, string>;
  taints: string[];
  /** `replicas`: the node's cap (0 for a node no longer registered). */
  capacity: { cpuMillis: number; memoryBytes: number; replicas: number };
  used: { cpuMillis: number; memoryBytes: number };
  /** Replicas its allocation holds. */
  replicas: number;
  tenure: number;
  /** Registered now (its lease is alive): the node record exists. */
  registered: boolean;
  state: NodeStatus['state'] | 'unknown';
  runtime: string;
  /** What the agent reports wrong with the node (a full disk, CCA-E0570): no new placements while any holds. */
  conditions: NodeCondition[];
}

export async function nodeViews(store: Store): Promise<{ revision: number; nodes: NodeView[] }> {
  const nodes = await readFacts(store, 'node');
  const at = nodes.revision;
  const [statuses, allocations] = await Promise.all([readFacts(store, 'nodeStatus', [], at), readFacts(store, 'allocation', [], at)]);
  const status = new Map(statuses.facts.map((f) => [f.value.node, f.value]));
  const alloc = new Map(allocations.facts.map((f) => [f.value.node, f.value]));
  const names = new Set([...nodes.facts.map((f) => f.value.name), ...status.keys()]);
  const record = new Map(nodes.facts.map((f) => [f.value.name, f]));
  return {
    revision: at,
    nodes: [...names].sort().map((name) => nodeView(name, record.get(name), status.get(name), alloc.get(name))),
  };
}

/** One node's view from its record (absent once its lease expired), status and allocation: pure, as replicaView. */
export function nodeView(name: string, r: { value: NodeRecord; kv: { createRevision: number } } | undefined, s: NodeStatus | undefined, a: Allocation | undefined): NodeView {
  return {
    name,
    zone: r?.value.zone ?? '',
    labels: r?.value.labels ?? {},
    taints: r?.value.taints ?? [],
    capacity: r?.value.capacity ?? { cpuMillis: 0, memoryBytes: 0, replicas: 0 },
    used: a?.used ?? { cpuMillis: 0, memoryBytes: 0 },
    replicas: a?.replicas.length ?? 0,
    tenure: r?.kv.createRevision ?? s?.tenure ?? 0,
    registered: r !== undefined,
    state: s && r && s.tenure === r.kv.createRevision ? s.state : s?.state === 'lost' ? 'lost' : 'unknown',
    runtime: r?.value.runtime ?? '',
    conditions: r?.value.conditions ?? [],
  };
}
