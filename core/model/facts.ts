import { z } from 'zod';
import { storedServiceSpecSchema } from './service.js';
import { DEFAULTS, LIMITS } from './defaults.js';
import { NODE_REPLICAS } from './node.js';
import { allowRuleSchema } from './service-shape.js';
import { NETWORK_LIMITS } from './network-limits.js';
import { replacesSchema, replicaEndedSchema, replicaOriginSchema, stopBySchema, withLegacyOutcome } from './replica-outcome.js';

/**
 * Value schemas of the facts controllers and agents write. Kept small: each is the least
 * a reader needs to act, plus what `cca why` shows. Fact schemas are plain (non-strict)
 * objects, so a newer writer's extra field does not break an older reader.
 */

const ms = z.int().min(0);
const resources = z.object({ cpuMillis: z.int().min(0), memoryBytes: z.int().min(0) });

/** `/replicas/<service>/<replica>`: one replica the replica controller wants to exist, or is stopping. */
export const replicaRecordSchema = z
  .object({
    id: z.string(),
    service: z.string(),
    /** The mod revision of `/services/<service>` this replica was made from (rollouts compare it). */
    specRevision: z.int().min(0),
    /** The template hash (core/model/template.ts) of the spec it was made from; '' from writers before rollouts. */
    template: z.string().default(''),
    desired: z.enum(['run', 'stop']),
    createdAt: ms,
    /** When `desired` became stop; the grace period runs from here. */
    stopRequestedAt: ms.optional(),
    /** Set once stopped (or lost) for good; the record is deleted after retention. */
    retired: z.boolean().default(false),
    /**
     * The sentence writers before typed outcomes stored; new writers leave it empty. Shown for
     * old records only: sentences are rendered from the typed fields (replica-outcome.ts).
     */
    reason: z.string().default(''),
    /** Why it was created (absent only on records from before typed outcomes). */
    origin: replicaOriginSchema.optional(),
    /** A replacement: the replica it replaces and how that one ended. */
    replaces: replacesSchema.optional(),
    /** Why the replica controller asked it to stop (set with `desired: stop`, unless it ended by itself). */
    stopBy: stopBySchema.optional(),
    /** How it ended (set with `retired`). */
    ended: replicaEndedSchema.optional(),
    /** Consecutive failures of the replicas this one replaces (0: not a replacement of a failure). */
    attempt: z.int().min(0).optional(),
    /** Backoff: the scheduler places it no earlier than this (jobs/controllers/backoff.ts). */
    notBefore: ms.optional(),
    /** What the replaced replica failed with, for the pending reason ("init step migrate failed (code 1)"). */
    failure: z.string().optional(),
    /** The agent's coded diagnostic of that failure (e.g. CCA-E0530: the command cannot be started). */
    failureDiagnostic: z.object({ code: z.string(), message: z.string() }).optional(),
    /** Stopped by a node drain: a stateful one retires only on a proof of the stop (its node's report, or loss with a proof), never on the grace alone. */
    drained: z.boolean().optional(),
  })
  // Old records: their `completed` sentence read once, here (see withLegacyOutcome).
  .transform(withLegacyOutcome);

/** `/assigned/<node>/<replica>`: the scheduler's placement, with everything the agent needs to run it. */
export const assignmentSchema = z.object({
  replica: z.string(),
  service: z.string(),
  node: z.string(),
  /** The node's tenure (the create revision of its `/nodes/<node>` key) when placed. */
  tenure: z.int().min(0),
  resources,
  specRevision: z.int().min(0),
  /**
   * The spec itself, so an agent can run from its cache while the control plane is away. Read
   * as stored (an older server's looser path and mode rules included): the agent re-checks.
   */
  spec: storedServiceSpecSchema,
  /** Desired state on the node: run, or stop within the grace period. */
  desired: z.enum(['run', 'stop']).default('run'),
  placedAt: ms,
});

/**
 * `/placements/<replica>`: where the scheduler placed a replica. One key per replica, so a
 * placement can compare "no other assignment of this replica exists" on a single key
 * (assignments are keyed by node, and a store compare names one key).
 */
export const replicaPlacementSchema = z.object({
  replica: z.string(),
  service: z.string(),
  node: z.string(),
  tenure: z.int().min(0),
  at: ms,
});

/** `/allocations/<node>`: the authoritative sum of the node's assignments, changed in the same txn as each. */
export const allocationSchema = z.object({
  node: z.string(),
  tenure: z.int().min(0),
  used: resources,
  /** Never more than the node's cap (NODE_REPLICAS.max at most): the scheduler places no further. */
  replicas: z.array(z.string()).max(NODE_REPLICAS.max),
});

/** `/node-status/<node>`: the node controller's view of readiness, per tenure. */
export const nodeStatusSchema = z.object({
  node: z.string(),
  tenure: z.int().min(0),
  /** unreachable: silent past its lease while a majority is silent too (the quorum hold, docs/fencing.md); nothing is replaced. */
  state: z.enum(['ready', 'lost', 'cordoned', 'unreachable']),
  since: ms,
  reason: z.string().default(''),
  /** Lost because the node controller expired its lease (not the store): its replicas wait QUORUM.lostGraceMs at least. */
  expired: z.boolean().optional(),
});

/** `/lost/<node>/<replica>`: the node controller's finding that a replica went with its node. */
export const lostReplicaSchema = z.object({
  replica: z.string(),
  service: z.string(),
  node: z.string(),
  tenure: z.int().min(0),
  at: ms,
  /** For stateful replicas: what proves the old copy stopped (see fences). */
  proof: z.enum(['lease-expired', 'node-confirmed', 'operator-fence']),
});

export const healthStateSchema = z.enum(['unknown', 'passing', 'failing']);

/** `/observed/<node>/<replica>`: what the agent sees of one workload. */
export const observationSchema = z.object({
  replica: z.string(),
  service: z.string(),
  node: z.string(),
  tenure: z.int().min(0),
  /** `pulling`: the node is fetching the image from its registry (controllers treat it as `starting`). */
  state: z.enum(['pending', 'pulling', 'init', 'starting', 'running', 'stopping', 'exited', 'failed', 'lost']),
  exitCode: z.int().optional(),
  restarts: z.int().min(0).default(0),
  health: z.object({ liveness: healthStateSchema.default('unknown'), readiness: healthStateSchema.default('unknown') }).default({ liveness: 'unknown', readiness: 'unknown' }),
  usage: resources.optional(),
  /** The image digest actually run. */
  image: z.string().default(''),
  /** Where the workload can be reached: its own address (own network namespace) or the node's (host network). */
  address: z.string().optional(),
  /** Port name → the port to connect to at `address` (the container port unless the runtime maps it). */
  ports: z.record(z.string(), z.int().min(1).max(65_535)).optional(),
  /** Init step progress: name of the step running or failed, with its output tail. */
  init: z
    .object({ step: z.string(), state: z.enum(['running', 'succeeded', 'failed']), exitCode: z.int().optional(), tail: z.string().default(''), timedOut: z.boolean().optional() })
    .optional(),
  /** While `pulling`: the attempt (1 for the first) and, when containerd reports it, the bytes fetched so far. */
  pull: z.object({ attempt: z.int().min(1), bytes: z.number().min(0).optional() }).optional(),
  /** An attached coded diagnostic (e.g. image not in catalogue). */
  diagnostic: z.object({ code: z.string(), message: z.string() }).optional(),
  at: ms,
});

/** `/events/<node>/<id>`: something the agent saw happen, for people (not for decisions). */
export const eventSchema = z.object({
  node: z.string(),
  replica: z.string().optional(),
  kind: z.string(),
  message: z.string(),
  at: ms,
});

/**
 * What a decision read: the key, its mod revision, and the value as it was then — embedded
 * when small, else cited: `value` empty, `hash` the SHA-256 of the (redacted) value and
 * `bytes` its size, so `why` can show it read at that revision while the store retains it
 * (jobs/decisions/record.ts says which values are cited).
 */
export const evidenceSchema = z.object({
  key: z.string(),
  modRevision: z.int().min(0),
  value: z.string(),
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/).optional(),
  bytes: z.int().min(0).optional(),
});

/** `/decisions/<kind>/<subject>/<id>`: immutable, carries its evidence and its cause. */
export const decisionSchema = z.object({
  id: z.string(),
  kind: z.enum(['service', 'replica', 'node']),
  subject: z.string(),
  controller: z.string(),
  action: z.string(),
  at: ms,
  evidence: z.array(evidenceSchema),
  /** The decision key or fact key (a terminal) that justified this one. */
  cause: z.object({ decision: z.string() }).or(z.object({ fact: z.string(), modRevision: z.int().min(0) })).optional(),
  reasons: z.array(z.string()),
  /**
   * A digest of everything the decision was made on, when that is more than its evidence
   * embeds (e.g. every node a pending replica could not use): the same basis and the same
   * outcome is not a new decision, so a converged system writes nothing.
   */
  basis: z.string().optional(),
});

/** `/repeats/<controller>/<kind>/<subject>`: how often the same outcome repeated; never a cause. */
export const repeatSchema = z.object({
  decision: z.string(),
  count: z.int().min(1),
  first: ms,
  last: ms,
  /** The basis of the latest repetition (see the decision's `basis`): the same one again is no repetition. */
  basis: z.string().optional(),
});

/** `/audit/<node>`: the auditor's rebuild of a node's allocation at one revision. */
export const auditFindingSchema = z.object({
  node: z.string(),
  revision: z.int().min(0),
  open: z.boolean(),
  expected: resources,
  recorded: resources,
  at: ms,
});

/** `/repair/<node>`: an operator's request that the scheduler repair an audited node. */
export const repairRequestSchema = z.object({ node: z.string(), requestedBy: z.string(), at: ms, finding: z.int().min(0) });

/**
 * `/nodeops/<node>`: an operator's intent for a node (`cca node cordon|drain|remove`). The
 * scheduler places nothing on a cordoned or draining node; the replica controller replaces a
 * draining node's replicas elsewhere within each service's rolling-update limits; the node
 * controller forgets a removed node that is not registered (the tenure it covers).
 */
export const nodeOpSchema = z.object({
  node: z.string(),
  cordoned: z.boolean(),
  drain: z.boolean().default(false),
  /** Removal of a lost node: the last tenure it covers (0 = none). */
  removeTenure: z.int().min(0).default(0),
  requestedBy: z.string(),
  at: ms,
});

/** `/fences/<node>`: an operator's assertion that a node's workloads are stopped (`cca fence --confirm`). */
export const fenceSchema = z.object({ node: z.string(), tenure: z.int().min(0), assertedBy: z.string(), at: ms });

/**
 * `/endpoints/<service>`: replicas that are running and ready on ready nodes, with their
 * addresses; listed by replica id up to a byte bound (ENDPOINT_LIMITS in
 * jobs/controllers/endpoints.ts), `ready` counting them all (absent: as many as are listed).
 */
export const endpointsSchema = z.object({
  service: z.string(),
  endpoints: z.array(z.object({ replica: z.string(), node: z.string(), address: z.string(), ports: z.record(z.string(), z.int()) })),
  ready: z.int().min(0).optional(),
  at: ms,
});

/** `/autoscale/<service>`: the autoscaler's intent; the replica controller honours it. */
export const autoscaleIntentSchema = z.object({
  service: z.string(),
  desired: z.int().min(0),
  /** The mean CPU utilisation (percent of request) the last write saw. */
  observedCpuPercent: z.number().min(0),
  /** When `desired` last changed. */
  stableSince: ms,
  at: ms,
  /** The decision that set `desired` (the replica controller cites it as its cause). */
  decision: z.string().optional(),
  /**
   * The stabilisation window's record: each recommendation in force from `at` until the
   * next one. Scale-down goes only to the highest of those in the window (docs/autoscaling.md).
   */
  recommendations: z.array(z.object({ at: ms, desired: z.int().min(0) })).default([]),
});

/** `/rollouts/<service>`: the service's latest rolling update: in progress, complete or stuck. */
export const rolloutSchema = z.object({
  service: z.string(),
  fromRevision: z.int().min(0),
  toRevision: z.int().min(0),
  state: z.enum(['progressing', 'complete', 'stuck']),
  startedAt: ms,
  /** Stuck: how many new replicas are not ready, and what their observations say. */
  reason: z.string().default(''),
  /** Template hashes rolled from and to (the replica controller pauses a stuck roll to `toTemplate`). */
  fromTemplate: z.string().default(''),
  toTemplate: z.string().default(''),
  /** Replicas wanted (excluding ones that ran to completion), new-template replicas ready and live, old ones live. */
  desired: z.int().min(0).default(0),
  newReady: z.int().min(0).default(0),
  newLive: z.int().min(0).default(0),
  oldLive: z.int().min(0).default(0),
  /** When the new replicas last made progress (more of them ready); the deadline runs from here. */
  progressAt: ms.default(0),
  progressDeadlineMs: ms.default(0),
  finishedAt: ms.optional(),
});

/**
 * `/volumes/<node>/<service>/<volume>`: a local volume the storage controller wants on a node.
 * One per (node, service, volume), not per replica: a replacement (a new replica id) on the
 * same node mounts the same directory, which is how data outlives the replica (docs/volumes.md).
 */
export const volumeRecordSchema = z.object({
  node: z.string(),
  service: z.string(),
  volume: z.string(),
  sizeBytes: z.int().min(1),
  /** The replica whose placement first made the volume wanted on this node. */
  replica: z.string().optional(),
  at: ms.default(0),
  /**
   * When a replica was last placed here with this volume, and which: of several nodes holding
   * a service's volume, a replacement goes back to the one used last (the newest data).
   */
  usedAt: ms.default(0),
  usedBy: z.string().optional(),
  /** How long the data stays once released (from the spec that wanted it: the spec may be gone by then). */
  keepForMs: ms.default(DEFAULTS.volumeKeepForMs),
  /**
   * Released (service deleted, volume no longer declared) and waiting out `keepForMs`: the
   * record, and with it the data on the node, goes at `deleteAt` unless the service declares
   * it again or an operator keeps it (`/volume-holds/`).
   */
  releasing: z.object({ since: ms, deleteAt: ms, why: z.enum(['service-deleted', 'undeclared']) }).optional(),
  /** An operator's hold cancelled the deletion (`cca volume keep`). */
  kept: z.boolean().default(false),
});

/** An operator keeps a released volume's data (`cca volume keep`); deleting the hold lets the release run again. */
export const volumeHoldSchema = z.object({ at: ms, by: z.string().max(253).optional() });

/** `/observed-volumes/<node>/<service>/<volume>`: the agent's report of that volume. */
export const volumeObservationSchema = z.object({
  state: z.enum(['creating', 'ready', 'failed']),
  path: z.string(),
  sizeBytes: z.int().min(0),
  /** Bytes the directory holds (measured; the directory runtime does not enforce the size). */
  usedBytes: z.int().min(0).optional(),
  diagnostic: z.object({ code: z.string(), message: z.string() }).optional(),
  at: ms,
});

/** One allowance of a policed replica, as the agent enforces it: these source addresses may reach it on this port. */
export const networkRuleSchema = z.object({
  /** Omitted: every port (an `allow` without `on port`). */
  port: z.int().min(1).max(65_535).optional(),
  /** Omitted with the port: every protocol. */
  protocol: z.enum(['tcp', 'udp']).optional(),
  /** The client services this rule admits (for people and `cca why`). */
  services: z.array(z.string()),
  /** Addresses of those services' replicas, from their address sets, sorted. */
  from: z.array(z.string()),
});

/** A dotted-quad IPv4 address: the only kind an allowance admits (agent/nft.ts renders nothing else). */
export const IPV4_PATTERN = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/**
 * `/network/<node>`: which replicas of the node are policed. Every replica assigned to the
 * node is listed: `open` (its service has no policy: every source may reach it) or `allow`
 * (only what its service's policy, `/netpolicy/<service>`, admits from the address sets it
 * names, `/netaddrs/<client>`; everything else is dropped). No addresses, no allowances: its
 * size follows the node's replica cap (core/model/network.ts: networkRulesMaxBytes).
 */
export const networkRulesSchema = z.object({
  node: z.string(),
  replicas: z
    .array(
      z.object({
        replica: z.string(),
        service: z.string(),
        policy: z.enum(['open', 'allow']),
      }),
    ),
  at: ms,
});

/**
 * `/netpolicy/<service>`: the policy in force for a policed service's replicas: its current
 * spec's `allow` list (a policy change rolls nothing), or, once the service is deleted, the
 * one its replicas were placed with. Named ports are resolved by the agent against each
 * replica's placed spec (core/model/network.ts: allowancesFor).
 */
export const netPolicySchema = z.object({
  service: z.string(),
  allow: z.array(allowRuleSchema).max(LIMITS.listItems),
  source: z.enum(['spec', 'placed']),
  at: ms,
});

/**
 * `/netaddrs/<service>`: the IPv4 addresses of a client service's replicas with an
 * admissible observation in a live state (rule 5), shared by every policy that names the
 * service. Sorted and distinct; at most NETWORK_LIMITS.maxAddresses listed, `total` counts all.
 */
export const netAddrsSchema = z.object({
  service: z.string(),
  addresses: z.array(z.string().regex(IPV4_PATTERN)).max(NETWORK_LIMITS.maxAddresses),
  total: z.int().min(0),
  at: ms,
});

export type ReplicaRecord = z.output<typeof replicaRecordSchema>;
export type Assignment = z.output<typeof assignmentSchema>;
export type ReplicaPlacement = z.output<typeof replicaPlacementSchema>;
export type Allocation = z.output<typeof allocationSchema>;
export type NodeStatus = z.output<typeof nodeStatusSchema>;
export type LostReplica = z.output<typeof lostReplicaSchema>;
export type Observation = z.output<typeof observationSchema>;
export type NodeEvent = z.output<typeof eventSchema>;
export type Decision = z.output<typeof decisionSchema>;
export type Repeat = z.output<typeof repeatSchema>;
export type AuditFinding = z.output<typeof auditFindingSchema>;
export type RepairRequest = z.output<typeof repairRequestSchema>;
export type Fence = z.output<typeof fenceSchema>;
export type NodeOp = z.output<typeof nodeOpSchema>;
export type Endpoints = z.output<typeof endpointsSchema>;
export type AutoscaleIntent = z.output<typeof autoscaleIntentSchema>;
export type Rollout = z.output<typeof rolloutSchema>;
export type VolumeRecord = z.output<typeof volumeRecordSchema>;
export type VolumeHold = z.output<typeof volumeHoldSchema>;
export type VolumeObservation = z.output<typeof volumeObservationSchema>;
export type NetworkRules = z.output<typeof networkRulesSchema>;
export type NetworkRule = z.output<typeof networkRuleSchema>;
export type ReplicaPolicy = NetworkRules['replicas'][number];
export type NetPolicy = z.output<typeof netPolicySchema>;
export type NetAddrs = z.output<typeof netAddrsSchema>;
