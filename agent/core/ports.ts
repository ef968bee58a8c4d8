import type { Diagnostic } from '../../core/diagnostics/index.js';
import type { Assignment, HealthCheck, NodeEvent, NodeRecordInput, Observation, ServiceSpec, VolumeObservation, VolumeRecord } from '../../core/model/index.js';
import type { WorkloadFile, WorkloadHandle, WorkloadVolume } from './runtime.js';

/**
 * What the agent's core talks to. Each port is small; the real agent (agent/agent.ts)
 * implements them with HTTP, files and sockets, the simulation (jobs/sim/agent.ts) with its
 * store, an in-memory disk and the fake runtime. Nothing here imports a Node builtin: the
 * browser console runs the same core.
 */

/**
 * Two clocks. Every duration the core times (keepalive period, the fence deadline, probe
 * intervals, report refreshes) is on `mono`, which never jumps; `wall` only stamps what is
 * reported (observations, events). The real shell may use one clock for both.
 */
export interface AgentClock {
  mono(): number;
  wall(): number;
}

/** What a registration answers: the lease, its TTL, and the tenure (the node record's create revision). */
export interface Registration {
  lease: number;
  ttl: number;
  tenure: number;
  revision: number;
}

export interface AssignmentsAnswer {
  revision: number;
  changed: boolean;
  assignments: Assignment[];
  /** The current membership version, read at the same revision (docs/fencing.md); the outage oracle checks it. */
  membership?: unknown;
}

/** One volume as the agent reports it: which one, and what it sees of it. */
export type ObservedVolume = VolumeObservation & { service: string; volume: string };

/**
 * The control plane as the agent sees it: exactly the agent routes (`/v1/agent/...`). A call
 * that gets no answer throws `UnreachableError`, a coded refusal `ServerError` (agent/core/errors.ts);
 * the core decides what each means (docs/agent.md).
 */
export interface ControlPlane {
  /** A node credential is held (enrolled before, or by `enroll`). */
  readonly enrolled: boolean;
  /**
   * Which credential is held: it changes whenever the credential does. Every `ServerError`
   * of a call made with a credential carries the generation it was made with, so the core
   * can tell a refusal of the credential in hand from a late answer to a replaced one.
   */
  readonly generation: number;
  /** Enroll with the join token and keep the credential; throws the refusal. */
  enroll(): Promise<void>;
  /** The server refused the credential in hand (401): drop it, so the next lease step enrolls again. */
  forgetCredential(): void;
  register(record: NodeRecordInput, leaseTtlSeconds: number, resumeLease?: number): Promise<Registration>;
  keepalive(lease: number): Promise<{ ttl: number }>;
  /** The node's assignments, long-polled: answers at once when they changed after `after`. */
  assignments(after: number, waitMs: number): Promise<AssignmentsAnswer>;
  observations(tenure: number, observations: Observation[]): Promise<void>;
  events(tenure: number, events: NodeEvent[]): Promise<void>;
  /** The volumes the storage controller wants on this node (`/volumes/<node>/`). */
  volumes(): Promise<VolumeRecord[]>;
  /** Report the node's volumes; the server deletes reports of volumes not in the list. */
  observedVolumes(tenure: number, volumes: ObservedVolume[]): Promise<void>;
}

/**
 * Whether a strict majority of the members confirm the control plane is unreachable (the
 * quorum rule, docs/fencing.md). The core fences at its fence point only when this says no:
 * `fence.due(now) && !confirmsOutage(now)`. Times are on the core's monotonic clock. The
 * shell gathers the peers' answers (agent/peer/, the simulation's peer network) and decides
 * with agent/core/quorum.ts; the core only reads the outcome and keeps the supervisors'
 * deadline in step with it.
 */
export interface OutageOracle {
  confirmsOutage(now: number): boolean;
  /** While an outage is confirmed past the fence point: until when the workloads may run (the supervisors' deadline follows it). */
  runsUntil?(now: number): number | undefined;
  /** A restarted agent: the previous run's confirmations ran unbroken from the lease's fence point `from` to `until`. */
  resume?(from: number, until: number): void;
  /** The membership that came with an assignments answer, fetched by a request sent at `sentAt`. */
  learned?(membership: unknown, sentAt: number): void;
  /** The membership copy it counts against (AgentCore.status): its version, its members, how many of them publish a peer key. */
  copy?(): MembershipCopyView | undefined;
}

export interface MembershipCopyView {
  version: number;
  members: number;
  withPeers: number;
}

export const NEVER_CONFIRMS: OutageOracle = { confirmsOutage: () => false };

export interface LeaseState {
  lease: number;
  tenure: number;
  ttl: number;
}

/**
 * The cached desired state as read at start. `unknown` names the replicas the cache cannot
 * tell about — every one (`'all'`) when there is no cache or it is unusable — whose
 * workloads the core leaves alone until the server's assignments arrive (agent/core/desired.ts).
 */
export interface CachedDesired {
  revision: number;
  assignments: Assignment[];
  unknown: 'all' | ReadonlySet<string>;
}

/** How the state directory's disk is (agent/state.ts): the writes failing for want of space, and the free space. */
export interface DiskHealth {
  /** The state directory, for the diagnostic. */
  dir: string;
  /** Files whose latest write failed with no space left (ENOSPC, EDQUOT) and has not worked since. */
  noSpace: { file: string; reason: string }[];
  /** Free bytes an unprivileged writer may use on the directory's filesystem, when known. */
  freeBytes?: number;
}

/**
 * What survives an agent restart (agent/state.ts on a real node; memory in the simulation).
 * Writes never throw: a failed one is reported through `onReport` (CCA-E0594) and the agent
 * carries on from memory; so is a cached desired state that cannot be used (CCA-E0592/E0593).
 */
export interface AgentDisk {
  lease(): LeaseState | undefined;
  saveLease(lease: LeaseState | undefined): void;
  /** The lease's own fence point (wall ms), as last saved: a restart resumes its fence clock from it. */
  fenceAt(): number | undefined;
  /**
   * The lease's fence point moved (a renewal, a store-down answer, the lease lost): saves it,
   * and the supervisors' deadline — `supervisorsAt`, the fence point unless a confirmed outage
   * runs later — in the same call, so the supervisors never see the one without the other.
   */
  saveFenceAt(at: number, supervisorsAt?: number): void;
  /** The wall-clock time at which the supervisors stop every workload: the fence point, or later while peers confirm an outage. */
  supervisorDeadline(): number | undefined;
  /** Moves the supervisors' deadline alone (a confirmed outage's end, or back to the fence point). */
  saveRunUntil(at: number): void;
  /** The cached desired state; `wallNow` names a copy of an unusable file kept aside. */
  desired(wallNow: number): CachedDesired;
  saveDesired(revision: number, assignments: Assignment[]): void;
  /** Where coded problems with the disk go: the core installs its handler (log and node event). `d` is absent for a problem resolved. */
  onReport: (line: string, d?: Diagnostic) => void;
  /**
   * How the disk is now; tries the failed writes again first (their latest content), so a
   * disk that has room again clears its failures without waiting for the next change. Absent:
   * a disk that cannot fill (the simulation's memory).
   */
  health?(): DiskHealth;
}

/** A replica's host side, made before its start: files written, volumes made. Throws `Refusal` for names it will not use. */
export interface Workspace {
  prepare(a: Assignment): { dir: string; files: WorkloadFile[]; env: Record<string, string>; volumes: WorkloadVolume[] };
}

export interface VolumeInfo {
  service: string;
  volume: string;
  path: string;
  sizeBytes: number;
  usedBytes: number;
}

/** The node's local volumes (agent/volumes.ts). */
export interface LocalVolumes {
  ensure(service: string, volume: string, sizeBytes: number): unknown;
  remove(service: string, volume: string): void;
  list(): VolumeInfo[];
}

/** Runs one health probe of a running workload: true when it passed. */
export interface Prober {
  probe(check: HealthCheck, spec: ServiceSpec, handle: WorkloadHandle, address: string | undefined): Promise<boolean>;
}

/** Where the core says what it did: a log line (operators) and node events (reported, `cca events`). */
export interface AgentLog {
  log(line: string): void;
}
