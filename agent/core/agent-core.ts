import { makeDiagnostic, messageOf } from '../../core/diagnostics/index.js';
import type { Assignment, NodeEvent, NodeRecordInput } from '../../core/model/index.js';
import { QUORUM } from '../../core/model/quorum.js';
import { Refusal, ServerError, UnreachableError } from './errors.js';
import { DesiredCache } from './desired.js';
import { DISK, DiskWatch } from './disk.js';
import { FENCE } from './fence.js';
import { HealthChecks } from './health-checks.js';
import { LeaseKeeper } from './lease.js';
import { plan, type SlotView } from './plan.js';
import { NEVER_CONFIRMS, type AgentClock, type AgentDisk, type AssignmentsAnswer, type ControlPlane, type LocalVolumes, type MembershipCopyView, type OutageOracle, type Prober, type Workspace } from './ports.js';
import { Reporter } from './reporting.js';
import { argvOf, type Runtime, type RuntimeEvent, type WorkloadStatus } from './runtime.js';
import { applyStatus, exitState, newSlot, TERMINAL, type Slot } from './slot.js';
import { startFailure } from './start-failure.js';
import { VOLUME_SYNC_MS, VolumeSync } from './volumes.js';

export interface AgentCoreOptions {
  node: string;
  record: Omit<NodeRecordInput, 'name' | 'images' | 'runtime' | 'agentVersion'>;
  leaseTtlSeconds?: number;
  /** Observations of autoscaled replicas are re-sent (with fresh usage) at least this often. */
  reportEveryMs?: number;
  /**
   * Other replicas' usage is refreshed this often (default 30 s, never below reportEveryMs):
   * only the autoscaler acts on usage. The controllers that watch `/observed/` pass over a
   * usage-only rewrite (jobs/controllers/usage-report.ts), but each is still a commit and a
   * watch event for every pod and console (docs/benchmarks.md, cost item 7).
   */
  usageEveryMs?: number;
  clock: AgentClock;
  random: () => number;
  control: ControlPlane;
  runtime: Runtime;
  disk: AgentDisk;
  workspace: Workspace;
  volumes: LocalVolumes;
  prober: Prober;
  /** Below this much free space in the state directory the node reports `disk full` (CCA-E0570); DISK.defaultMinFreeBytes by default, 0: only failed writes count. */
  diskMinFreeBytes?: number;
  /** Whether a majority confirms the control plane is unreachable (issue #21); never, by default. */
  outage?: OutageOracle;
  log: (line: string) => void;
  /** Every node event as it happens (the simulation's trace); they are reported either way. */
  onEvent?: (e: NodeEvent) => void;
  /** The node enforces network policy (replicas in their own namespaces, agent/network-policy.ts). */
  enforcesPolicy?: boolean;
  /** A replica is about to start (afresh): the shell forgets what it knew of its network. */
  onStarting?: (replica: string) => void;
  /** Replicas were started: the shell puts the node's network rules in their namespaces. */
  onStarted?: () => void;
}

const START_CONCURRENCY = 4;
/** After a failed assignments read, the next one waits this long (doubling, with jitter). */
export const POLL_BACKOFF = { initialMs: 200, maxMs: 5_000 } as const;

/**
 * The node agent's decisions, without I/O of its own: registration and tenure, keepalives
 * and the fence clock, running `plan()` against the runtime, supervision (fencing, liveness),
 * and what to report when. It restarts nothing by itself (an exited replica is reported; the
 * control plane applies the restart policy with a new replica), runs what it last knew while
 * the server is away, and fences itself before its lease could expire unless the outage
 * oracle confirms the control plane is down for a majority.
 *
 * Driven from outside: the real agent's loops (agent/agent.ts) and the simulation's ticks
 * (jobs/sim/agent.ts) call `leaseStep`, `poll`, `tick`; every runtime event, answer and
 * timer reaches the same methods.
 */
export class AgentCore {
  readonly leases: LeaseKeeper;
  private readonly slots = new Map<string, Slot>();
  private readonly reporter: Reporter;
  private readonly volumeSync: VolumeSync;
  private readonly checks: HealthChecks;
  private readonly outage: OutageOracle;
  private readonly cache: DesiredCache;
  private desired: Assignment[] = [];
  /** The server's last list as received (JSON), to tell a new list from the same one again. */
  private lastAnswer: string | undefined;
  private fenced = false;
  private closed = false;
  private unreachableLogged = false;
  private lastServerError = '';
  private reconcileChain: Promise<void> = Promise.resolve();
  private reconcilePending = false;
  private lastRefresh = Number.NEGATIVE_INFINITY;
  private lastUsage = Number.NEGATIVE_INFINITY;
  private lastVolumeSync = Number.NEGATIVE_INFINITY;
  private lastDiskCheck = Number.NEGATIVE_INFINITY;
  private readonly disk: DiskWatch;
  /** Work started by a runtime event or a tick and not awaited there (probes, exit inspections). */
  private readonly inflight = new Set<Promise<unknown>>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly o: AgentCoreOptions) {
    this.outage = o.outage ?? NEVER_CONFIRMS;
    this.cache = new DesiredCache(o.disk, o.clock);
    this.disk = new DiskWatch(o.node, o.diskMinFreeBytes ?? DISK.defaultMinFreeBytes);
    // The disk's coded problems (an unusable cache, a failed write) are logged and reported as node events.
    o.disk.onReport = (line, d) => {
      this.log(line);
      this.event(d ? 'state-problem' : 'state-resolved', d ? `${d.code} ${d.message}` : line);
    };
    this.reporter = new Reporter({ node: o.node, nodeAddress: o.record.address ?? '', control: o.control, reportEveryMs: this.reportEveryMs, usageEveryMs: o.usageEveryMs ?? 30_000 });
    this.volumeSync = new VolumeSync({ node: o.node, control: o.control, volumes: o.volumes, log: (l) => this.log(l), event: (k, m) => this.event(k, m) });
    this.checks = new HealthChecks({ runtime: o.runtime, prober: o.prober, log: (l) => this.log(l), event: (k, m, r) => this.event(k, m, r), kick: () => this.kick(), track: (p) => this.track(p) });
    this.leases = new LeaseKeeper({
      node: o.node,
      ttl: Math.max(FENCE.minTtlSeconds, o.leaseTtlSeconds ?? QUORUM.defaultTtlSeconds),
      control: o.control,
      disk: o.disk,
      runtime: o.runtime,
      record: o.record,
      clock: o.clock,
      log: (l) => this.log(l),
      event: (kind, message) => this.event(kind, message),
      changed: () => this.kick(),
    });
  }

  private get reportEveryMs(): number {
    return this.o.reportEveryMs ?? 5_000;
  }

  /** Adopt what the runtime holds and restore the cached desired state and lease. */
  async start(): Promise<void> {
    this.desired = this.cache.load();
    // Never registered (or the lease is known lost): nothing runs until registration.
    // A restart during a confirmed outage resumes the chain of confirmations (docs/fencing.md).
    if (!this.leases.restore((from, until) => this.outage.resume?.(from, until))) this.fenced = true;
    this.unsubscribe = this.o.runtime.subscribe((e) => this.onRuntimeEvent(e));
    for (const s of await this.o.runtime.list({ usage: false })) this.adopt(s);
    this.kick();
  }

  /** Stop deciding. Workloads keep running: an agent shutdown is not a node drain. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    await this.idle();
  }

  /** Resolves once no reconcile, probe or exit inspection is pending (the simulation waits for it after each pass). */
  async idle(): Promise<void> {
    for (;;) {
      const chain = this.reconcileChain;
      await Promise.allSettled([chain, ...this.inflight]);
      if (chain === this.reconcileChain && this.inflight.size === 0 && !this.reconcilePending) return;
    }
  }

  /** `membership`: the copy the outage oracle counts a quorum against (undefined: none yet, or no quorum rule). */
  status(): { registered: boolean; tenure: number | undefined; fenced: boolean; membership: MembershipCopyView | undefined; slots: { replica: string; state: string }[] } {
    return { registered: this.leases.registered, tenure: this.leases.lease?.tenure, fenced: this.fenced, membership: this.outage.copy?.(), slots: [...this.slots.values()].map((s) => ({ replica: s.replica, state: s.state })) };
  }

  /**
   * What the agent's metrics show (docs/observability.md): its workloads by state, how long
   * until the fence point (negative: past it; undefined before the first lease), and how
   * long since the last successful keepalive was sent (Infinity: none yet, or the lease lost).
   */
  vitals(): { slots: Record<string, number>; fenced: boolean; fenceMarginMs: number | undefined; sinceKeepaliveMs: number } {
    const now = this.o.clock.mono();
    const slots: Record<string, number> = {};
    for (const s of this.slots.values()) slots[s.state] = (slots[s.state] ?? 0) + 1;
    const at = this.leases.fence.fenceAt();
    return { slots, fenced: this.fenced, fenceMarginMs: at === undefined ? undefined : at - now, sinceKeepaliveMs: this.leases.fence.sinceRenewal(now) };
  }

  /** The replica has a slot here (log requests are answered only for those). */
  holds(replica: string): boolean {
    return this.slots.has(replica);
  }

  /** Replicas with a workload and an assignment: the ones network rules apply to. */
  placed(): { replica: string; spec: Assignment['spec'] }[] {
    return [...this.slots.values()].flatMap((s) => (s.handle && s.assignment ? [{ replica: s.replica, spec: s.assignment.spec }] : []));
  }

  // ---- entry points the shell's loops call ---------------------------------------------

  /** Register, enroll or keep alive once; returns how long to wait before the next step. */
  async leaseStep(): Promise<number> {
    try {
      const next = await this.leases.step();
      this.unreachableLogged = false;
      this.lastServerError = '';
      return next;
    } catch (e) {
      this.onCallError(e, 'lease');
      return FENCE.keepaliveRetryMs;
    }
  }

  /** One read of the assignments after `after`; the revision to read after next, or undefined when the call failed. */
  async poll(after: number, waitMs: number): Promise<number | undefined> {
    let r: AssignmentsAnswer;
    // A membership copy counts only if the request that fetched it was sent recently enough (docs/fencing.md).
    const sentAt = this.o.clock.mono();
    try {
      r = await this.o.control.assignments(after, waitMs);
    } catch (e) {
      this.onCallError(e, 'assignments');
      return undefined;
    }
    if (r.membership !== undefined) this.outage.learned?.(r.membership, sentAt);
    // The answer is the node's whole list at `revision` whatever `changed` says: a placement
    // committed as the long poll timed out, before its read, is in the list but not in
    // `changed` — trusting the flag lost it for good (the next poll waits after `revision`).
    const mine = r.assignments.filter((a) => a.node === this.o.node);
    const answer = JSON.stringify(mine);
    if (r.changed || after === 0 || answer !== this.lastAnswer) {
      this.desired = mine;
      this.lastAnswer = answer;
      this.cache.answered(r.revision, this.desired);
      this.kick();
    }
    return r.revision;
  }

  /** How long to wait after the `failures`th failed read in a row (doubling from 200 ms to 5 s, with jitter). */
  pollBackoff(failures: number): number {
    const base = Math.min(POLL_BACKOFF.initialMs * 2 ** Math.max(0, failures - 1), POLL_BACKOFF.maxMs);
    return base + Math.floor(this.o.random() * base);
  }

  /** The periodic pass (every FENCE.checkMs): fence, runtime refresh, probes, reports, volumes. */
  tick(): Promise<unknown> {
    if (this.closed) return Promise.resolve();
    const now = this.o.clock.mono();
    const work: Promise<unknown>[] = [];
    this.leases.followOutage(this.outage.runsUntil?.(now));
    if (this.fenceDue(now) !== this.fenced) this.kick();
    if (now - this.lastRefresh >= 1_000) {
      this.lastRefresh = now;
      this.kick();
      work.push(this.refresh(now - this.lastUsage >= this.reportEveryMs));
    }
    this.checks.run(this.slots.values(), now);
    work.push(this.report(now));
    if (now - this.lastDiskCheck >= DISK.checkMs) {
      this.lastDiskCheck = now;
      this.checkDisk();
    }
    if (now - this.lastVolumeSync >= VOLUME_SYNC_MS) {
      this.lastVolumeSync = now;
      work.push(this.syncVolumes(now));
    }
    return Promise.all(work);
  }

  /** Ask for a reconcile; runs are serialised and coalesced. */
  kick(): void {
    if (this.reconcilePending || this.closed) return;
    this.reconcilePending = true;
    this.reconcileChain = this.reconcileChain.then(async () => {
      this.reconcilePending = false;
      try {
        await this.reconcile();
      } catch (e) {
        this.log(`reconcile failed: ${messageOf(e)}`);
      }
    });
  }

  // ---- the fencing decision ------------------------------------------------------------

  /**
   * The outage oracle changed its mind (a round of peer answers): the supervisors' deadline
   * follows it at once, not at the next tick, and the reconcile looks again.
   */
  outageChanged(): void {
    if (this.closed) return;
    this.leases.followOutage(this.outage.runsUntil?.(this.o.clock.mono()));
    this.kick();
  }

  /** Fence at the fence point, unless a majority confirms the control plane itself is unreachable (issue #21). */
  fenceDue(now: number): boolean {
    return this.leases.fence.due(now) && !this.outage.confirmsOutage(now);
  }

  private updateFenced(now: number): void {
    const due = this.fenceDue(now);
    if (due === this.fenced) return;
    this.fenced = due;
    if (due) {
      const d = makeDiagnostic('CCA-E0506', { node: this.o.node, sinceMs: this.leases.fence.sinceRenewal(now), marginMs: FENCE.marginMs });
      this.log(`${d.code} ${d.message}`);
      this.event('fenced', d.message);
    } else {
      this.log('lease held: workloads may run');
      this.event('unfenced', 'lease held: workloads may run');
    }
  }

  // ---- the disk --------------------------------------------------------------------------

  /**
   * A full state directory is a node condition (CCA-E0570), published on the node record so
   * the scheduler places nothing new here; workloads keep running. Cleared the same way.
   */
  private checkDisk(): void {
    const health = this.o.disk.health?.();
    if (!health || !this.disk.observe(health, this.o.clock.wall())) return;
    const c = this.disk.condition;
    if (c) {
      this.log(`${c.code} ${c.message}`);
      this.event('disk-full', `${c.code} ${c.message}`);
    } else {
      this.log('disk writes work again: the node takes placements again (CCA-E0570 resolved)');
      this.event('disk-ok', 'disk writes work again: CCA-E0570 resolved');
    }
    this.leases.setConditions(c ? [c] : []);
  }

  /** The node's conditions as last decided (tests, status). */
  conditions(): string[] {
    return this.disk.condition ? [this.disk.condition.kind] : [];
  }

  // ---- failures ------------------------------------------------------------------------

  private onCallError(e: unknown, what: string): void {
    if (this.closed) return;
    this.reporter.callFailed();
    if (e instanceof UnreachableError) {
      if (!this.unreachableLogged) this.log(`${e.diagnostic.code} ${e.message} (${what}; retrying)`);
      this.unreachableLogged = true;
    } else if (e instanceof ServerError) {
      if (e.status === 401) {
        this.leases.credentialRefused(e, what);
      } else if (e.status === 409 && e.diagnostic.code !== 'CCA-E0611' && this.leases.registered) {
        // A 409 refuses our tenure; CCA-E0611 is a write that met a concurrent change: the next report tries again.
        this.leases.lost('the server refused our tenure');
      } else {
        // A server that keeps failing the same way (its store down) is logged once, not per retry.
        const line = `${what}: ${e.message}`;
        if (line !== this.lastServerError) this.log(line);
        this.lastServerError = line;
      }
    } else {
      this.log(`${what}: unexpected ${messageOf(e)}`);
    }
  }

  private log(line: string): void {
    this.o.log(line);
  }

  /** A node event: reported with the next report, and handed to onEvent. */
  event(kind: string, message: string, replica?: string): void {
    const e: NodeEvent = { node: this.o.node, kind, message, at: this.o.clock.wall(), ...(replica === undefined ? {} : { replica }) };
    this.reporter.event(e);
    this.o.onEvent?.(e);
  }

  private track(p: Promise<unknown>): void {
    const t = p.catch(() => undefined).finally(() => this.inflight.delete(t));
    this.inflight.add(t);
  }

  // ---- the runtime's side --------------------------------------------------------------

  private adopt(s: WorkloadStatus): void {
    const slot = this.slots.get(s.handle.replica) ?? newSlot(s.handle.replica);
    slot.handle = s.handle;
    this.applyStatus(slot, s);
    this.slots.set(slot.replica, slot);
    this.log(`adopted ${slot.replica} (${slot.state})`);
    this.event('adopted', `re-adopted ${slot.state} workload after an agent restart`, slot.replica);
  }

  private applyStatus(slot: Slot, s: WorkloadStatus): void {
    applyStatus(slot, s);
    this.noteStartFailure(slot, s);
  }

  /** A command that could not be started gets CCA-E0530 (command, node, runtime, fix) instead of a bare exit code. */
  private noteStartFailure(slot: Slot, s: WorkloadStatus): void {
    const a = slot.assignment;
    if (!a || slot.livenessFailed || s.state !== 'exited' || !s.exitDetail) return;
    const d = startFailure({ runtime: this.o.runtime.name, node: this.o.node, replica: slot.replica, service: a.service, image: a.spec.image, argv: argvOf(a.spec), exitCode: s.exitCode, detail: s.exitDetail });
    if (!d || slot.diagnostic?.code === d.code) return;
    slot.diagnostic = d;
    this.log(`${slot.replica}: ${d.message}`);
    this.event('start-failed', d.message, slot.replica);
  }

  private onRuntimeEvent(e: RuntimeEvent): void {
    const slot = this.slots.get(e.replica);
    if (!slot) return;
    if (e.kind === 'exited') {
      // A stop we asked for ends `exited` whatever the signal's code; only a workload that
      // died on its own (or never got going) is `failed`.
      slot.state = exitState(slot, e.exitCode, e.oom);
      slot.exitCode = e.exitCode;
      delete slot.address;
      delete slot.ports;
      if (e.oom) {
        const d = makeDiagnostic('CCA-E0511', { replica: e.replica, service: slot.handle?.service ?? '', memoryBytes: slot.assignment?.spec.resources.memoryBytes ?? 0 });
        slot.diagnostic = { code: d.code, message: d.message };
      }
      const h = slot.handle;
      if (h) {
        // The report waits for the init progress, so a failed state is never reported without
        // the init step that failed (the control plane retires the replica on that report).
        slot.settling = true;
        this.track(
          Promise.resolve()
            .then(() => this.o.runtime.inspect(h))
            .then(
              (s) => {
                if (s.init) slot.init = s.init;
                this.noteStartFailure(slot, s);
              },
              () => undefined,
            )
            .finally(() => {
              slot.settling = false;
              this.kick();
            }),
        );
      }
      this.event(e.oom ? 'oom' : 'exited', `workload exited with code ${e.exitCode}${slot.fenced ? ' (fenced)' : ''}`, e.replica);
      this.log(`${e.replica} exited with code ${e.exitCode}`);
    } else {
      slot.state = 'lost';
      slot.diagnostic = { code: e.code, message: e.message };
      this.event('lost', `${e.code} ${e.message}`, e.replica);
      this.log(`${e.replica} lost: ${e.code}`);
    }
    this.kick();
  }

  private async refresh(withUsage: boolean): Promise<void> {
    try {
      const statuses = await this.o.runtime.list({ usage: withUsage });
      if (withUsage) this.lastUsage = this.o.clock.mono();
      for (const s of statuses) {
        const slot = this.slots.get(s.handle.replica);
        if (slot?.handle?.id === s.handle.id && !TERMINAL.has(slot.state)) this.applyStatus(slot, s);
      }
    } catch (e) {
      this.log(`runtime list failed: ${messageOf(e)}`);
    }
  }

  // ---- reports ---------------------------------------------------------------------------

  private async report(now: number): Promise<void> {
    const lease = this.leases.lease;
    // Without a credential every report would be refused: wait for the enrollment.
    if (!this.leases.registered || !lease || !this.o.control.enrolled) return;
    try {
      await this.reporter.report(this.slots.values(), this.desired, lease.tenure, now, this.o.clock.wall());
    } catch (e) {
      this.onCallError(e, 'report');
    }
  }

  private async syncVolumes(now: number): Promise<void> {
    const lease = this.leases.lease;
    if (!this.leases.registered || !lease) return;
    try {
      await this.volumeSync.sync(this.desired, lease.tenure, now, this.o.clock.wall());
    } catch (e) {
      this.onCallError(e, 'volumes');
    }
  }

  // ---- reconcile -------------------------------------------------------------------------

  private async reconcile(): Promise<void> {
    this.updateFenced(this.o.clock.mono());
    // A workload the cache cannot tell about is left alone until the server answers (agent/core/desired.ts); a fence still stops it.
    const views: SlotView[] = [...this.slots.values()].filter((s) => this.fenced || !this.cache.leavesAlone(s.replica)).map((s) => ({
      replica: s.replica,
      state: s.state,
      hasHandle: s.handle !== undefined,
      held: s.held,
      fenced: s.fenced,
      ...(s.assignment ? { stopGraceMs: s.assignment.spec.stopGraceMs } : {}),
    }));
    for (const a of this.desired) {
      const slot = this.slots.get(a.replica);
      if (slot) slot.assignment = a;
    }
    const toStart: [Slot, Assignment][] = [];
    for (const action of plan(views, this.desired, this.leases.lease?.tenure, this.fenced)) {
      if (action.kind === 'start') {
        const slot = this.slots.get(action.assignment.replica) ?? newSlot(action.assignment.replica);
        slot.assignment = action.assignment;
        this.slots.set(slot.replica, slot);
        toStart.push([slot, action.assignment]);
        continue;
      }
      const slot = this.slots.get(action.replica)!;
      if (action.kind === 'stop') {
        slot.fenced = this.fenced;
        slot.state = 'stopping';
        await this.o.runtime.stop(slot.handle!, action.graceMs);
        this.log(`stopping ${slot.replica} (grace ${action.graceMs} ms${this.fenced ? ', fenced' : ''})`);
      } else {
        if (slot.handle) await this.o.runtime.remove(slot.handle);
        this.slots.delete(slot.replica);
        this.log(`removed ${slot.replica}`);
      }
    }
    if (toStart.length === 0) return;
    const catalogue = await this.o.runtime.catalogue();
    // A few starts at once: runtimes spend most of a start waiting (ctr, fork/exec).
    const queue = [...toStart];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await this.startSlot(next[0], next[1], catalogue);
    };
    await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, queue.length) }, worker));
    await this.refresh(false);
    this.o.onStarted?.();
  }

  /** A spec the agent will not run (CCA-E0531): held like an image it does not have, never retried. */
  private refuse(slot: Slot, a: Assignment, r: Refusal): void {
    const d = makeDiagnostic('CCA-E0531', { node: this.o.node, replica: a.replica, service: a.service, reason: r.reason });
    slot.held = true;
    slot.state = 'failed';
    slot.diagnostic = { code: d.code, message: d.message };
    this.log(`${d.code} ${d.message}`);
    this.event('refused', `${d.code} ${d.message}`, a.replica);
  }

  private async startSlot(slot: Slot, a: Assignment, catalogue: Record<string, string> | undefined): Promise<void> {
    let image = '';
    if (catalogue !== undefined) {
      const digest = catalogue[a.spec.image];
      // A runtime that pulls (containerd) fetches what its catalogue lacks; the handle gets the digest after the pull.
      if (digest === undefined && !this.o.runtime.pulls) {
        const known = Object.keys(catalogue).sort().join(', ') || '(empty)';
        const d = makeDiagnostic('CCA-E0501', { service: a.service, image: a.spec.image, node: this.o.node, known });
        slot.held = true;
        slot.state = 'failed';
        slot.diagnostic = { code: d.code, message: d.message };
        this.log(`${a.replica}: ${d.code} ${d.message}`);
        this.event('held', `${d.code} ${d.message}`, a.replica);
        return;
      }
      image = digest ?? '';
    }
    try {
      // Names and paths are checked before any of them becomes a host path (agent/confine.ts).
      const { dir, files, env, volumes } = this.o.workspace.prepare(a);
      slot.state = 'starting';
      slot.fenced = false;
      delete slot.exitCode;
      delete slot.diagnostic;
      delete slot.liveness;
      delete slot.readiness;
      this.o.onStarting?.(a.replica);
      delete slot.livenessFailed;
      delete slot.address;
      delete slot.ports;
      slot.handle = await this.o.runtime.start({ replica: a.replica, service: a.service, spec: a.spec, image, env, files, volumes, dir });
      this.log(`started ${a.replica} (${a.service})`);
      this.event('started', `started on the ${this.o.runtime.name} runtime`, a.replica);
      if (!this.o.enforcesPolicy && a.spec.network.allow.length > 0) {
        const d = makeDiagnostic('CCA-E0529', { service: a.service, node: this.o.node, replica: a.replica });
        this.log(`${d.code} ${d.message}`);
        this.event('network-policy-unenforced', `${d.code} ${d.message}`, a.replica);
      }
    } catch (e) {
      if (e instanceof Refusal) return this.refuse(slot, a, e);
      const reason = messageOf(e);
      // containerd refuses at task start when the command is missing or not executable (runc's exec error).
      const noCommand = startFailure({ runtime: this.o.runtime.name, node: this.o.node, replica: a.replica, service: a.service, image: a.spec.image, argv: argvOf(a.spec), exitCode: undefined, detail: /executable file not found|no such file or directory|permission denied/i.test(reason) ? { spawnError: { message: reason } } : undefined });
      const d = noCommand ?? makeDiagnostic('CCA-E0504', { runtime: this.o.runtime.name, replica: a.replica, reason });
      slot.state = 'failed';
      slot.diagnostic = { code: d.code, message: d.message };
      this.log(`${d.code} ${d.message}`);
      this.event('start-failed', d.message, a.replica);
    }
  }
}
