import { AgentCore, NEVER_CONFIRMS, OutageLatch, ServerError, UnreachableError, type AgentDisk, type CachedDesired, type ControlPlane, type LeaseState, type LocalVolumes, type OutageOracle, type Prober, type VolumeInfo } from '../../agent/core/index.js';
import { FakeRuntime, type FakeWorkload } from '../../agent/core/fake-runtime.js';
import { isCcaError, makeDiagnostic } from '../../core/diagnostics/error.js';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { Assignment, NodeEvent, Observation } from '../../core/model/facts.js';
import type { NodeRecordInput } from '../../core/model/node.js';
import type { Op, Store } from '../../db/store.js';
import { REPORT_TXN_ROOM, staleObservationWrites } from '../stale-observations.js';
import { backFromSilence, membershipCopySchema, QUORUM, stampOnResume, type MembershipVersion } from '../../core/model/quorum.js';
import type { SimPeer } from './peer-net.js';

export interface AgentTiming {
  ttlSeconds: number;
  /** The quorum rule (docs/fencing.md): registered as the API does (backstop lease, TTL in the record), the peers the outage oracle. */
  quorum?: boolean;
}

/** One agent process's half of the quorum rule in the simulation: its latch and its membership copy. */
interface SimQuorum {
  latch: OutageLatch;
  copy: { copy: MembershipVersion; fetchedAt: number } | undefined;
}

export type AgentEvent = { kind: string; replica?: string; tenure?: number; detail?: string };

/**
 * A simulated node: the real agent core (agent/core/) on the node's clocks, the fake runtime
 * (which plays the supervisors too), a state file that survives restarts and power loss, and a
 * control plane that speaks the agent↔store protocol of the agent routes straight to the
 * simulation's store (through the gate that injects partitions and outages). Only the world
 * around the agent is simulated here; every decision is the real agent's.
 */
export class SimAgent implements SimPeer {
  readonly runtime: FakeRuntime;
  alive = true;
  /** What a running workload's readiness check finds (a story can make a version fail it); `unready` workloads fail it anyway. */
  readiness: (a: Pick<Assignment, 'replica' | 'service' | 'spec'>) => 'unknown' | 'passing' | 'failing' = () => 'passing';
  /**
   * Whether a majority confirms the control plane is unreachable (docs/fencing.md): with the
   * quorum rule, the current process's latch fed by the world's peer network; never otherwise.
   * A story may replace it at any time.
   */
  outage: OutageOracle = NEVER_CONFIRMS;
  /** The current process's confirmations (a restart starts a new one and resumes it from the state file, as the real agent). */
  private quorum: SimQuorum | undefined;
  private core: AgentCore | undefined;
  private readonly disk = new SimDisk();
  private readonly volumes = new SimVolumes();
  private readonly control: StoreControlPlane;
  private wall = 0;
  private mono = 0;
  private nextLeaseStep = Number.NEGATIVE_INFINITY;

  constructor(
    readonly record: NodeRecordInput & { name: string },
    store: Store,
    private readonly timing: AgentTiming,
    private readonly emit: (e: AgentEvent) => void,
    /** serverNow: the control plane's clock, for the stamps the agent routes write (handlers/routes/agent.ts). */
    opts: { subnet?: string | undefined; serverNow?: () => number } = {},
  ) {
    this.control = new StoreControlPlane(record.name, store, timing.quorum === true, opts.serverNow ?? (() => this.wall));
    this.runtime = new FakeRuntime({ catalogue: record.images, now: () => this.wall, manualTime: true, ...(opts.subnet === undefined ? {} : { ownNetwork: true, subnet: opts.subnet }) });
  }

  get tenure(): number | undefined {
    return this.disk.lease()?.tenure;
  }

  /**
   * One pass of the agent's loops. `wall` is the machine's clock (maybe skewed): only
   * timestamps and the supervisors' fence-at come from it. Every duration is timed on
   * `mono`, a monotonic clock.
   */
  async tick(wall: number, mono: number = wall): Promise<void> {
    this.wall = wall;
    this.mono = mono;
    const core = this.alive ? await this.ensureCore() : undefined;
    if (core && mono >= this.nextLeaseStep) this.nextLeaseStep = mono + (await core.leaseStep());
    // The supervisors are other processes: they may look between any two of the agent's
    // writes. So they look after the keepalive (a restarted agent renews first), before the
    // core's next pass repairs anything the keepalive wrote, and again after it.
    this.supervise(wall);
    // The world's peer round came just before: the supervisors' deadline follows it.
    core?.outageChanged();
    this.supervise(wall);
    if (!core) return;
    await core.poll(0, 0);
    await core.tick();
    await core.idle();
    this.runtime.advance();
    await core.idle();
  }

  /** The supervisors read the deadline the agent last wrote and kill every workload past it. */
  private supervise(wall: number): void {
    this.runtime.fenceAt = this.disk.supervisorDeadline();
    for (const r of this.runtime.supervise(wall)) this.emit({ kind: 'fenced', replica: r });
  }

  /** Process killed: workloads live on under the supervisors. */
  kill(): void {
    this.alive = false;
    this.drop();
  }

  /** Process restarted: reads its state file, re-adopts what the runtime still runs. */
  restart(): void {
    this.drop();
    this.alive = true;
  }

  /** Machine lost power: agent and workloads die; the state file survives. */
  powerOff(_at: number): void {
    this.alive = false;
    this.drop();
    this.runtime.powerOff();
  }

  private drop(): void {
    void this.core?.close();
    this.core = undefined;
    this.quorum = undefined;
    this.nextLeaseStep = Number.NEGATIVE_INFINITY;
  }

  private async ensureCore(): Promise<AgentCore> {
    if (this.core) return this.core;
    if (this.timing.quorum) this.useQuorum();
    const { images: _i, runtime: _r, agentVersion: _v, name: _n, ...record } = this.record as NodeRecordInput & { name: string; agentVersion?: string };
    const core = new AgentCore({
      node: this.record.name,
      record,
      leaseTtlSeconds: this.timing.ttlSeconds,
      clock: { mono: () => this.mono, wall: () => this.wall },
      // Only the retry jitter of a failed read uses it, and the simulation reads every tick.
      random: () => 0,
      control: this.control,
      runtime: this.runtime,
      disk: this.disk,
      workspace: { prepare: (a) => ({ dir: `/sim/${this.record.name}/replicas/${a.replica}`, files: [], env: {}, volumes: [] }) },
      volumes: this.volumes,
      prober: this.prober(),
      // Read through on every call: a story may swap the oracle at any time.
      outage: {
        confirmsOutage: (now) => this.outage.confirmsOutage(now),
        runsUntil: (now) => this.outage.runsUntil?.(now),
        resume: (from, until) => this.outage.resume?.(from, until),
        learned: (membership, sentAt) => this.outage.learned?.(membership, sentAt),
      },
      log: () => undefined,
      onEvent: (e) => this.onEvent(e),
      enforcesPolicy: true,
    });
    this.core = core;
    await core.start();
    return core;
  }

  /** A fresh process's half of the quorum rule: its latch (on the core's fence point) and membership copy, as the core's oracle. */
  private useQuorum(): void {
    const q: SimQuorum = { latch: new OutageLatch(() => this.core?.leases.fence.fenceAt()), copy: undefined };
    this.quorum = q;
    this.outage = {
      confirmsOutage: (now) => q.latch.confirmsOutage(now),
      runsUntil: (now) => q.latch.runsUntil(now),
      resume: (from, until) => q.latch.resume(from, until),
      learned: (membership, sentAt) => {
        const m = membershipCopySchema.nullable().optional().safeParse(membership);
        if (m.success && m.data && (!q.copy || sentAt >= q.copy.fetchedAt)) q.copy = { copy: m.data, fetchedAt: sentAt };
      },
    };
  }

  // ---- SimPeer: what the world's peer network reads (times on the core's monotonic clock) ----

  get node(): string {
    return this.record.name;
  }

  get latch(): OutageLatch {
    return this.quorum?.latch ?? new OutageLatch(() => undefined);
  }

  lastOkSentAt(): number | undefined {
    const since = this.core?.leases.fence.sinceRenewal(this.mono);
    return since === undefined || !Number.isFinite(since) ? undefined : this.mono - since;
  }

  keepaliveInFlight(): boolean {
    return this.core?.leases.keepaliveInFlight !== undefined;
  }

  ttlMs(): number {
    return (this.core?.leases.lease?.ttl ?? this.timing.ttlSeconds) * 1000;
  }

  membership(): { copy: MembershipVersion; fetchedAt: number } | undefined {
    return this.quorum?.copy;
  }

  /** The world answers the probes: a workload marked unalive fails liveness, an unready one readiness. */
  private prober(): Prober {
    return {
      probe: async (check, spec, handle) => {
        const w = this.runtime.workloads.get(handle.replica);
        if (!w || w.state !== 'running') return false;
        if (check === spec.health.liveness) return !w.unalive;
        return !w.unready && this.readiness({ replica: handle.replica, service: handle.service, spec }) === 'passing';
      },
    };
  }

  private onEvent(e: NodeEvent): void {
    if (e.kind === 'registered' || e.kind === 'lease-lost') this.emit({ kind: e.kind, ...(this.tenure === undefined ? {} : { tenure: this.tenure }) });
    else if (['started', 'exited', 'fenced', 'unfenced', 'liveness-failed', 'liveness', 'readiness', 'adopted'].includes(e.kind)) this.emit({ kind: e.kind, ...(e.replica === undefined ? {} : { replica: e.replica }), detail: e.message });
  }
}

/**
 * The state file: lease, the lease's fence point and the supervisors' deadline (later while
 * peers confirm an outage), desired state. It survives restarts and power loss.
 * Before the first desired state is saved there is none: the core then leaves what runs alone
 * until the server answers, as a real agent without `desired.json` does.
 */
class SimDisk implements AgentDisk {
  private l: LeaseState | undefined;
  private fence: number | undefined;
  private runUntil: number | undefined;
  private d: CachedDesired = { revision: 0, assignments: [], unknown: 'all' };
  /** Memory never fails a write: nothing to report. */
  onReport: AgentDisk['onReport'] = () => undefined;
  lease(): LeaseState | undefined {
    return this.l;
  }
  saveLease(lease: LeaseState | undefined): void {
    this.l = lease;
  }
  fenceAt(): number | undefined {
    return this.fence;
  }
  saveFenceAt(at: number, supervisorsAt = at): void {
    this.fence = at;
    this.runUntil = supervisorsAt;
  }
  supervisorDeadline(): number | undefined {
    return this.runUntil;
  }
  saveRunUntil(at: number): void {
    this.runUntil = at;
  }
  desired(): CachedDesired {
    return this.d;
  }
  saveDesired(revision: number, assignments: Assignment[]): void {
    this.d = { revision, assignments, unknown: new Set() };
  }
}

class SimVolumes implements LocalVolumes {
  private readonly held = new Map<string, VolumeInfo>();
  ensure(service: string, volume: string, sizeBytes: number): void {
    const key = `${service}/${volume}`;
    if (!this.held.has(key)) this.held.set(key, { service, volume, path: `/sim/volumes/${key}`, sizeBytes, usedBytes: 0 });
  }
  remove(service: string, volume: string): void {
    this.held.delete(`${service}/${volume}`);
  }
  list(): VolumeInfo[] {
    return [...this.held.values()];
  }
}

/** The HTTP status the agent routes answer a coded error with (handlers/http-status.ts, for the codes these calls meet). */
function asServerError(e: unknown): unknown {
  if (e instanceof Error && e.name === 'Unreachable') return new UnreachableError('sim://control-plane', e.message);
  if (!isCcaError(e)) return e;
  const status = e.code === 'CCA-E0107' ? 404 : e.code === 'CCA-E0613' || e.code === 'CCA-E0611' ? 409 : e.blame === 'environment' ? 503 : 400;
  return new ServerError(status, e.diagnostic);
}

/**
 * The agent routes' effect on the store (handlers/routes/agent.ts), called in-process: a
 * registration on a lease whose create revision is the tenure (resumed when the lease still
 * holds the record), keepalives, the assignments, and reports written only under the tenure.
 */
class StoreControlPlane implements ControlPlane {
  readonly enrolled = true;
  /** One credential for good: the simulation's nodes are never refused. */
  readonly generation = 0;

  constructor(
    private readonly node: string,
    private readonly store: Store,
    /** As the API registers since the quorum rule (handlers/routes/agent.ts): a backstop lease, the TTL in the record, the membership with the assignments. */
    private readonly quorum: boolean,
    private readonly serverNow: () => number,
  ) {}

  async enroll(): Promise<void> {}
  forgetCredential(): void {}

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw asServerError(e);
    }
  }

  register(record: NodeRecordInput, ttl: number, resumeLease?: number) {
    return this.call(async () => {
      const key = buildKey('node', this.node);
      const value = encodeFact('node', { ...record, name: this.node, ...(this.quorum ? { leaseTtlSeconds: ttl, renewingSince: this.serverNow() } : {}) });
      const existing = await this.store.get(key);
      if (resumeLease !== undefined && existing?.lease === resumeLease) {
        // As the route: renewingSince moves only after a silence of R, written before the renewal.
        let resumed = value;
        if (this.quorum) {
          const t = await this.store.leaseTimeToLive(resumeLease);
          const previous = decodeFact('node', existing.key, existing.value);
          const ttlMs = Math.min(previous.leaseTtlSeconds ?? t.grantedTtl, ttl) * 1000;
          const since = stampOnResume(previous.renewingSince, t.ttl < 0 ? undefined : (t.grantedTtl - t.ttl) * 1000, ttlMs, this.serverNow());
          resumed = encodeFact('node', { ...record, name: this.node, leaseTtlSeconds: ttl, renewingSince: since });
        }
        const r = await this.store.txn({ compare: [{ key, target: 'lease', op: '=', value: resumeLease }], success: [{ put: { key, value: resumed, lease: resumeLease } }] });
        if (r.succeeded) {
          const kept = await this.store.keepAlive(resumeLease);
          return { lease: resumeLease, ttl: this.quorum ? ttl : kept.ttl, tenure: existing.createRevision, revision: r.revision };
        }
      }
      if (existing && existing.lease !== 0) await this.store.revokeLease(existing.lease).catch(() => undefined);
      const lease = await this.store.grantLease(this.quorum ? Math.max(QUORUM.backstopSeconds, ttl) : ttl);
      const r = await this.store.txn({ compare: [{ key, target: 'createRevision', op: '=', value: 0 }], success: [{ put: { key, value, lease: lease.id } }] });
      if (!r.succeeded) throw new ServerError(409, makeDiagnostic('CCA-E0611', { what: `the registration of node ${this.node}` }));
      return { lease: lease.id, ttl: this.quorum ? ttl : lease.ttl, tenure: r.revision, revision: r.revision };
    });
  }

  keepalive(lease: number) {
    return this.call(async () => {
      const kv = await this.store.get(buildKey('node', this.node));
      if (!kv || kv.lease !== lease) throw new ServerError(404, makeDiagnostic('CCA-E0107', { lease }));
      if (!this.quorum) return this.store.keepAlive(lease);
      // The node controller expired this tenure and revokes the lease: no renewal from that write on.
      const st = await this.store.get(buildKey('nodeStatus', this.node));
      const status = st ? decodeFact('nodeStatus', st.key, st.value) : undefined;
      if (status?.state === 'lost' && status.expired && status.tenure === kv.createRevision) {
        await this.store.revokeLease(lease).catch(() => undefined);
        throw new ServerError(404, makeDiagnostic('CCA-E0107', { lease }));
      }
      // Back from a silence of R or more: stamped before the renewal, as the route does.
      const record = decodeFact('node', kv.key, kv.value);
      const t = await this.store.leaseTimeToLive(lease);
      if (t.ttl >= 0 && backFromSilence((t.grantedTtl - t.ttl) * 1000, (record.leaseTtlSeconds ?? t.grantedTtl) * 1000)) {
        const r = await this.store.txn({ compare: [{ key: kv.key, target: 'lease', op: '=', value: lease }], success: [{ put: { key: kv.key, value: encodeFact('node', { ...record, renewingSince: this.serverNow() }), lease } }] });
        if (!r.succeeded) throw new ServerError(404, makeDiagnostic('CCA-E0107', { lease }));
      }
      const renewed = await this.store.keepAlive(lease);
      // The agent fences by the TTL it registered with, not the backstop's.
      return { ttl: record.leaseTtlSeconds ?? renewed.ttl };
    });
  }

  assignments() {
    return this.call(async () => {
      const r = await this.store.range({ prefix: prefixOf('assigned', this.node) });
      const assignments = r.kvs.map((kv) => decodeFact('assigned', kv.key, kv.value));
      if (!this.quorum) return { revision: r.revision, changed: true, assignments };
      // The membership the agent counts its peers against, read at the same revision.
      const m = await this.store.get(buildKey('membership', 'nodes'), { revision: r.revision });
      const membership = m ? (decodeFact('membership', m.key, m.value).versions.at(-1) ?? null) : null;
      return { revision: r.revision, changed: true, assignments, membership };
    });
  }

  /** As the route: the report also deletes what the node reported of replicas released since (jobs/stale-observations.ts). */
  observations(tenure: number, observations: Observation[]): Promise<void> {
    if (observations.length === 0) return Promise.resolve();
    return this.call(async () => {
      const puts: Op[] = observations.map((o) => ({ put: { key: buildKey('observed', this.node, o.replica), value: encodeFact('observed', o) } }));
      const nodeKey = buildKey('node', this.node);
      for (let attempt = 0; attempt < 5; attempt++) {
        const prefix = prefixOf('assigned', this.node);
        const assigned = new Set((await this.store.range({ prefix, keysOnly: true })).kvs.map((kv) => kv.key.slice(prefix.length)));
        const stale = await staleObservationWrites(this.store, this.node, assigned, new Set(observations.map((o) => o.replica)), REPORT_TXN_ROOM - puts.length);
        const r = await this.store.txn({ compare: [{ key: nodeKey, target: 'createRevision', op: '=', value: tenure }, ...stale.compares], success: [...puts, ...stale.ops] });
        if (r.succeeded) return;
        const current = (await this.store.get(nodeKey))?.createRevision ?? 0;
        if (current !== tenure) throw new ServerError(409, makeDiagnostic('CCA-E0613', { node: this.node, tenure, current }));
        // A replica was assigned between the reads and the write: judge again.
      }
      throw new ServerError(409, makeDiagnostic('CCA-E0611', { what: `the assignments of node ${this.node}` }));
    });
  }

  /** Events go to the trace (SimAgent's onEvent), not the store. */
  async events(): Promise<void> {}

  volumes() {
    return this.call(async () => (await this.store.range({ prefix: prefixOf('volume', this.node) })).kvs.map((kv) => decodeFact('volume', kv.key, kv.value)));
  }

  observedVolumes(tenure: number, volumes: { service: string; volume: string }[]): Promise<void> {
    return this.call(async () => {
      const keep = new Set<string>();
      const ops: Op[] = [];
      for (const { service, volume, ...obs } of volumes as (Parameters<ControlPlane['observedVolumes']>[1][number])[]) {
        const key = buildKey('observedVolume', this.node, service, volume);
        keep.add(key);
        ops.push({ put: { key, value: encodeFact('observedVolume', obs) } });
      }
      for (const kv of (await this.store.range({ prefix: prefixOf('observedVolume', this.node), keysOnly: true })).kvs) if (!keep.has(kv.key)) ops.push({ delete: { key: kv.key } });
      await this.underTenure(tenure, ops);
    });
  }

  private underTenure(tenure: number, ops: Op[]): Promise<void> {
    return this.call(async () => {
      if (ops.length === 0) return;
      const r = await this.store.txn({ compare: [{ key: buildKey('node', this.node), target: 'createRevision', op: '=', value: tenure }], success: ops });
      if (!r.succeeded) throw new ServerError(409, makeDiagnostic('CCA-E0613', { node: this.node, tenure, current: 0 }));
    });
  }
}

export type { FakeWorkload };
