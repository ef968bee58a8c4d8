import { isCcaError } from '../../core/diagnostics/error.js';
import { buildKey, decodeFact, encodeFact, prefixOf } from '../../core/keys.js';
import type { Assignment, Observation } from '../../core/model/facts.js';
import type { NodeRecordInput } from '../../core/model/node.js';
import type { Op, Store } from '../../db/store.js';
import { FakeRuntime } from './runtime.js';
import { OutageLatch } from '../../agent/core/quorum.js';
import { membershipCopySchema, QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import type { SimPeer } from './peer-net.js';

export interface AgentTiming {
  ttlSeconds: number;
  /** The quorum rule (docs/fencing.md): registered as the API does (backstop lease, TTL in the record), peers asked past the fence point. */
  quorum?: boolean;
  keepaliveMs: number;
  /** Workloads stop this long before the lease could expire, timed from the last contact. */
  fenceMarginMs: number;
}

/** What survives an agent restart (its state file): the lease and the tenure it registered. */
interface Disk {
  lease?: number;
  tenure?: number;
}

export type AgentEvent = { kind: 'started' | 'stopped' | 'fenced' | 'registered' | 'lease-lost'; replica?: string; tenure?: number };

/**
 * A simulated node agent following the agent↔store protocol (docs/controllers.md):
 * register `/nodes/<node>` on a lease, keep it alive, run what `/assigned/<node>/` says
 * under the current tenure, report `/observed/<node>/<replica>` with a compare on the
 * tenure (a write from a lost tenure is refused by the store), fence its own workloads a
 * margin before the lease can expire, and keep running what it last knew otherwise.
 */
export class SimAgent implements SimPeer {
  readonly runtime = new FakeRuntime();
  /** Confirmations of an outage by a majority of peers (the real decision, fed by the world's peer network). */
  readonly latch = new OutageLatch(() => (Number.isFinite(this.lastOk) ? this.leaseDeadline : undefined));
  /** The fence point the lease alone gives; the supervisor's deadline may run later while the latch confirms. */
  private leaseDeadline = Infinity;
  private copy: { copy: MembershipVersion; fetchedAt: number } | undefined;
  alive = true;
  private disk: Disk = {};
  /** Local time of the last successful keepalive (or registration). */
  private lastOk = -Infinity;
  /** First and latest "store down" answers since then: the span the store's lease clock stood still. */
  private downFirst: number | undefined;
  private downLast: number | undefined;
  private lastKeepalive = -Infinity;
  /** The wall clock of the current loop, for timestamps. */
  private wall = 0;
  /** The last observation written per replica, to write only changes. */
  private written = new Map<string, string>();
  /** Replicas this tenure already started once: an exit is final, replacement is the controller's job. */
  private started = new Set<string>();
  /** Stateful replicas of past tenures whose stop this agent confirmed, and under which tenure. */
  private readonly confirmedUnder = new Map<string, number>();
  /** The volume reports last written (key → value), to write only changes. */
  private volumes = new Map<string, string>();
  /** What a running workload's readiness check reports (a story can make a version fail it). */
  readiness: (a: Assignment) => 'unknown' | 'passing' | 'failing' = () => 'passing';

  constructor(
    readonly record: NodeRecordInput & { name: string },
    private readonly store: Store,
    private readonly timing: AgentTiming,
    private readonly emit: (e: AgentEvent) => void,
  ) {}

  get tenure(): number | undefined {
    return this.disk.tenure;
  }

  /**
   * One pass of the agent's loop. `wall` is the machine's clock (maybe skewed, maybe
   * stepped by NTP): only timestamps come from it. Every duration — keepalive period,
   * fencing deadline — is timed on `mono`, a monotonic clock, because a clock that jumps
   * back would otherwise stretch the fencing window past the lease.
   */
  async tick(wall: number, mono: number = wall): Promise<void> {
    this.wall = wall;
    const local = mono;
    // After a failed keepalive the agent retries on every loop, not every keepalive period.
    // With the quorum rule a failed keepalive is retried every loop too, as the real agent does
    // (every 500 ms): back from a partition, it renews before its peers' "reaches" ends its run.
    const failed = this.timing.quorum === true && this.lastOk < this.lastKeepalive;
    const due = local - this.lastKeepalive >= this.timing.keepaliveMs || this.downLast !== undefined || failed;
    if (this.alive && this.disk.lease !== undefined && due) await this.keepalive(local);
    // While peers confirm an outage the supervisor's deadline follows the confirmations.
    this.runtime.fenceDeadline = Math.max(this.leaseDeadline, (this.alive ? this.latch.runsUntil(local) : undefined) ?? -Infinity);
    // The supervisor checks after the keepalive: a restarted agent renews first.
    for (const r of this.runtime.supervise(local, wall)) this.emit({ kind: 'fenced', replica: r });
    if (!this.alive) return;
    if (this.disk.lease === undefined) {
      await this.guard(() => this.register(local));
      if (this.disk.lease === undefined) return;
    }
    if (this.disk.tenure === undefined) return;
    const assignments = await this.guard(() => this.assignments(local));
    if (assignments) await this.guard(() => this.reconcile(assignments, local));
  }

  /** Process killed: workloads live on under the supervisor. */
  kill(): void {
    this.alive = false;
  }

  /** Process restarted: reads its state file, re-adopts what the runtime still runs. */
  restart(): void {
    this.alive = true;
    this.written.clear();
    this.volumes.clear();
    this.lastKeepalive = -Infinity;
    for (const w of this.runtime.workloads.values()) this.started.add(w.replica);
  }

  /** Machine lost power: agent and workloads die; the state file survives. */
  powerOff(at: number): void {
    this.alive = false;
    this.runtime.powerOff(at);
    this.started.clear();
  }

  private async guard<T>(f: () => Promise<T>): Promise<T | undefined> {
    try {
      return await f();
    } catch (e) {
      // Unreachable or store down: keep running what we last knew (rule 8).
      if (e instanceof Error && (e.name === 'Unreachable' || (isCcaError(e) && e.blame === 'environment'))) return undefined;
      throw e;
    }
  }

  private async register(local: number): Promise<void> {
    // With the quorum rule, as the API registers: a backstop lease, the TTL in the record for the node controller.
    const { id } = await this.store.grantLease(this.timing.quorum ? QUORUM.backstopSeconds : this.timing.ttlSeconds);
    const key = buildKey('node', this.record.name);
    const record = this.timing.quorum ? { ...this.record, leaseTtlSeconds: this.timing.ttlSeconds } : this.record;
    const r = await this.store.txn({ compare: [], success: [{ put: { key, value: encodeFact('node', record), lease: id } }, { range: { key } }] });
    const kv = (r.responses[1] as { range: { kvs: { createRevision: number }[] } }).range.kvs[0]!;
    this.disk = { lease: id, tenure: kv.createRevision };
    this.lastKeepalive = local;
    this.renewed(local);
    this.written.clear();
    this.volumes.clear();
    this.started.clear();
    this.emit({ kind: 'registered', tenure: kv.createRevision });
  }

  private async keepalive(local: number): Promise<void> {
    this.lastKeepalive = local;
    try {
      await this.store.keepAlive(this.disk.lease!);
      this.renewed(local);
    } catch (e) {
      if (isCcaError(e, 'CCA-E0107')) {
        // The lease is gone: our tenure ended. Stop everything it ran, register anew.
        this.emit({ kind: 'lease-lost', tenure: this.disk.tenure! });
        for (const w of this.runtime.running()) this.runtime.kill(w.replica, this.wall);
        this.disk = {};
        return;
      }
      // The server answered that its store is down: the store's lease clock stands still
      // while it is down (leases are refreshed by the time they had left), so the fencing
      // deadline moves by the span we *saw* it down — never by more, since the lease may
      // have had little time left when the outage began.
      if (isCcaError(e, 'CCA-E0111')) {
        this.downFirst ??= local;
        this.downLast = local;
        this.leaseDeadline = this.deadlineFrom(this.lastOk) + (this.downLast - this.downFirst);
        this.runtime.fenceDeadline = this.leaseDeadline;
      }
    }
  }

  private renewed(local: number): void {
    this.lastOk = local;
    this.downFirst = undefined;
    this.downLast = undefined;
    this.leaseDeadline = this.deadlineFrom(local);
    this.runtime.fenceDeadline = this.leaseDeadline;
  }

  // ---- SimPeer: what the world's peer network reads ----
  lastOkSentAt(): number | undefined {
    return Number.isFinite(this.lastOk) ? this.lastOk : undefined;
  }

  keepaliveInFlight(): boolean {
    return false;
  }

  ttlMs(): number {
    return this.timing.ttlSeconds * 1000;
  }

  membership(): { copy: MembershipVersion; fetchedAt: number } | undefined {
    return this.copy;
  }

  get node(): string {
    return this.record.name;
  }

  private deadlineFrom(ok: number): number {
    return ok + this.timing.ttlSeconds * 1000 - this.timing.fenceMarginMs;
  }

  private async assignments(local: number): Promise<Map<string, Assignment>> {
    const r = await this.store.range({ prefix: prefixOf('assigned', this.record.name) });
    if (this.timing.quorum) {
      // The membership comes with the assignments, read at the same revision (as the API answers).
      const m = await this.store.get(buildKey('membership', 'nodes'), { revision: r.revision });
      const v = m ? membershipCopySchema.safeParse(decodeFact('membership', m.key, m.value).versions.at(-1)) : undefined;
      if (v?.success) this.copy = { copy: v.data, fetchedAt: local };
    }
    return new Map(r.kvs.map((kv) => {
      const a = decodeFact('assigned', kv.key, kv.value);
      return [a.replica, a];
    }));
  }

  private async reconcile(assigned: Map<string, Assignment>, local: number): Promise<void> {
    const tenure = this.disk.tenure!;
    const fenced = local >= this.runtime.fenceDeadline;
    for (const a of assigned.values()) {
      if (a.tenure !== tenure) continue;
      const w = this.runtime.workloads.get(a.replica);
      if (a.desired === 'run' && !w && !this.started.has(a.replica) && !fenced) {
        this.runtime.start(a.replica, a.service, tenure, this.wall);
        this.started.add(a.replica);
        this.emit({ kind: 'started', replica: a.replica });
      } else if (a.desired === 'stop' && w?.state === 'running' && this.runtime.kill(a.replica, this.wall)) {
        this.emit({ kind: 'stopped', replica: a.replica });
      }
    }
    for (const w of this.runtime.running()) {
      const a = assigned.get(w.replica);
      if ((!a || a.tenure !== tenure || w.tenure !== tenure) && this.runtime.kill(w.replica, this.wall)) this.emit({ kind: 'stopped', replica: w.replica });
      // Liveness failed past its threshold: stop it and report it failed (agent/agent.ts does the same).
      else if (w.unalive && this.runtime.kill(w.replica, this.wall)) {
        w.livenessFailed = `liveness failed: exec probe did not pass 3 time(s) in a row, so the agent stopped replica ${w.replica}`;
        this.emit({ kind: 'stopped', replica: w.replica });
      }
    }
    await this.report(assigned, tenure);
    await this.reportVolumes(assigned, tenure);
  }

  /**
   * Volumes as the real agent keeps them (agent/volumes.ts): those `/volumes/<node>/` wants and
   * those its assignments mount exist, anything else is deleted; reported on change only.
   */
  private async reportVolumes(assigned: Map<string, Assignment>, tenure: number): Promise<void> {
    const node = this.record.name;
    const want = new Map<string, number>();
    for (const kv of (await this.store.range({ prefix: prefixOf('volume', node) })).kvs) {
      const v = decodeFact('volume', kv.key, kv.value);
      want.set(buildKey('observedVolume', node, v.service, v.volume), v.sizeBytes);
    }
    for (const a of assigned.values()) {
      for (const v of a.spec.volumes) {
        const key = buildKey('observedVolume', node, a.service, v.name);
        if (!want.has(key)) want.set(key, v.sizeBytes);
      }
    }
    const guard = { key: buildKey('node', node), target: 'createRevision' as const, op: '=' as const, value: tenure };
    const values = new Map([...want].map(([key, sizeBytes]) => [key, encodeFact('observedVolume', { state: 'ready', path: `/sim${key}`, sizeBytes, usedBytes: 0, at: 0 })]));
    const ops: Op[] = [];
    for (const [key, value] of values) if (this.volumes.get(key) !== value) ops.push({ put: { key, value } });
    for (const key of (await this.store.range({ prefix: prefixOf('observedVolume', node), keysOnly: true })).kvs.map((kv) => kv.key)) {
      if (!values.has(key)) ops.push({ delete: { key } });
    }
    if (ops.length === 0) return;
    if ((await this.store.txn({ compare: [guard], success: ops })).succeeded) this.volumes = values;
  }

  /** Observations of what runs under this tenure; stale ones (no assignment any more) are removed. */
  private async report(assigned: Map<string, Assignment>, tenure: number): Promise<void> {
    const nodeKey = buildKey('node', this.record.name);
    const guard = { key: nodeKey, target: 'createRevision' as const, op: '=' as const, value: tenure };
    for (const w of this.runtime.workloads.values()) {
      const a = assigned.get(w.replica);
      if (!a || a.tenure !== tenure || w.tenure !== tenure) continue;
      const cpu = w.state === 'running' ? this.runtime.cpuUsage(w) : undefined;
      const obs: Observation = {
        replica: w.replica,
        service: w.service,
        node: this.record.name,
        tenure,
        state: w.livenessFailed ? 'failed' : w.state,
        ...(w.exitCode !== undefined ? { exitCode: w.exitCode } : {}),
        restarts: 0,
        health: { liveness: w.livenessFailed ? 'failing' : 'unknown', readiness: w.state !== 'running' ? 'unknown' : w.unready ? 'failing' : this.readiness(a) },
        image: a.spec.image,
        ...(cpu !== undefined ? { usage: { cpuMillis: cpu, memoryBytes: 64 * 1024 * 1024 } } : {}),
        // Its own address (a node with a replica network), else host networking: the node's
        // declared address; the spec's container ports.
        address: w.address ?? (this.record.address || '127.0.0.1'),
        ports: Object.fromEntries(a.spec.ports.map((p) => [p.name, p.container])),
        ...(w.livenessFailed ? { diagnostic: { code: 'CCA-E0513', message: w.livenessFailed } } : {}),
        at: w.endedAt ?? w.startedAt,
      };
      const value = encodeFact('observed', obs);
      if (this.written.get(w.replica) === value) continue;
      const r = await this.store.txn({ compare: [guard], success: [{ put: { key: buildKey('observed', this.record.name, w.replica), value } }] });
      if (r.succeeded) this.written.set(w.replica, value);
    }
    // A stateful replica of a past tenure that does not run here: confirm its stop under
    // this tenure, the proof the node controller needs to replace it (docs/volumes.md).
    const confirmed = new Set<string>();
    for (const a of assigned.values()) {
      if (a.tenure >= tenure || a.desired !== 'run' || a.spec.volumes.length === 0) continue;
      const w = this.runtime.workloads.get(a.replica);
      if (w?.state === 'running') continue;
      confirmed.add(a.replica);
      const obs: Observation = {
        replica: a.replica, service: a.service, node: this.record.name, tenure, state: 'exited', restarts: 0,
        health: { liveness: 'unknown', readiness: 'unknown' }, image: '', at: this.wall,
      };
      if (this.confirmedUnder.get(a.replica) === tenure) continue;
      const r = await this.store.txn({ compare: [guard], success: [{ put: { key: buildKey('observed', this.record.name, a.replica), value: encodeFact('observed', obs) } }] });
      if (r.succeeded) this.confirmedUnder.set(a.replica, tenure);
    }
    const existing = await this.store.range({ prefix: prefixOf('observed', this.record.name), keysOnly: true });
    for (const kv of existing.kvs) {
      const replica = kv.key.slice(kv.key.lastIndexOf('/') + 1);
      const a = assigned.get(replica);
      if ((a && a.tenure === tenure) || confirmed.has(replica)) continue;
      await this.store.txn({ compare: [guard], success: [{ delete: { key: kv.key } }] });
      this.written.delete(replica);
      const w = this.runtime.workloads.get(replica);
      if (w && w.state !== 'running') this.runtime.workloads.delete(replica);
    }
    for (const w of [...this.runtime.workloads.values()]) {
      if (w.state !== 'running' && !assigned.has(w.replica)) this.runtime.workloads.delete(w.replica);
    }
  }
}
