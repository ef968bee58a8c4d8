import { makeDiagnostic, messageOf } from '../core/diagnostics/index.js';
import type { Assignment, NodeEvent, NodeRecordInput, Observation } from '../core/model/index.js';

export { AGENT_VERSION } from './lease.js';
import { AgentClient, ServerError, UnreachableError } from './client.js';
import { LeaseKeeper } from './lease.js';
import { DesiredCache } from './desired.js';
import { FENCE } from './fence.js';
import { CheckState, probeFor, probeText } from './health.js';
import { checkAssignment, Refusal } from './confine.js';
import { materialize } from './materialize.js';
import type { NetnsManager } from './netns.js';
import { PolicyFollower } from './network-policy.js';
import { LogServer, type LogServerOptions } from './log-server.js';
import { plan, type SlotView } from './plan.js';
import { argvOf, type Runtime, type RuntimeEvent, type WorkloadHandle, type WorkloadStatus } from './runtime.js';
import { startFailure } from './start-failure.js';
import { fingerprint, newSlot, observationOf, type Slot } from './slot.js';
import type { StateDir } from './state.js';
import { VolumeDir } from './volumes.js';
import { NodePeer } from './peer/node-peer.js';
import { QUORUM } from '../core/model/quorum.js';

export interface AgentOptions {
  server: string;
  node: string;
  /** Join token, used to enroll when the state directory holds no credential (or it is refused). */
  token: string;
  state: StateDir;
  runtime: Runtime;
  record: Omit<NodeRecordInput, 'name' | 'images' | 'runtime' | 'agentVersion'>;
  leaseTtlSeconds?: number;
  /** Long-poll wait per request. */
  pollWaitMs?: number;
  /** Observations of autoscaled replicas are re-sent (with fresh usage) at least this often. */
  reportEveryMs?: number;
  /**
   * Other replicas' usage is refreshed this often (default 30 s, never below reportEveryMs):
   * only the autoscaler acts on usage, and every observation write wakes the controllers
   * that watch `/observed/`, so frequent usage-only rewrites of a large cluster keep the
   * workers busy for nothing (docs/benchmarks.md, system).
   */
  usageEveryMs?: number;
  now?: () => number;
  log?: (line: string) => void;
  /** Network isolation (the runtime puts replicas in these namespaces): follow and enforce `/network/<node>`. */
  network?: NetnsManager;
  /** How requests to the server are made: the global fetch, or one trusting --ca (agent/https.ts). */
  fetch?: typeof fetch;
  /** Tighter bounds on one log request (tests); LOG_LIMITS otherwise. */
  logLimits?: LogServerOptions['limits'];
  /** The peer endpoint (docs/fencing.md): listen (default 127.0.0.1:0), advertise, and how questions are sent. */
  peer?: { listen?: string; advertise?: string; fetch?: typeof fetch };
}

const TERMINAL = new Set<Observation['state']>(['exited', 'failed', 'lost']);
const BACKOFF = { initialMs: 200, maxMs: 5_000 } as const;
const START_CONCURRENCY = 4;
const VOLUME_SYNC_MS = 2_000;
const VOLUME_REFRESH_MS = 30_000;

/**
 * The node agent: registers on a lease, keeps it alive, long-polls its assignments, reconciles
 * the runtime against them, and reports. It restarts nothing by itself (an exited replica is
 * reported; the control plane applies the restart policy with a new replica), runs what it
 * last knew while the server is away, and fences itself before its lease could expire.
 */
export class Agent {
  private readonly client: AgentClient;
  private readonly leases: LeaseKeeper;
  private readonly cache: DesiredCache;
  private readonly slots = new Map<string, Slot>();
  private readonly events: NodeEvent[] = [];
  private readonly now: () => number;
  private desired: Assignment[] = [];
  private revision = 0;
  private fenced = false;
  private closed = false;
  private unreachableLogged = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  private reconcileChain: Promise<void> = Promise.resolve();
  private reconcilePending = false;
  private reporting = false;
  private lastRefresh = 0;
  private lastUsage = 0;
  private readonly loops: Promise<void>[] = [];
  private unsubscribe: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private readonly policy: PolicyFollower | undefined;
  private readonly logServer: LogServer;
  private readonly volumes: VolumeDir;
  private syncingVolumes = false;
  private lastVolumeSync = 0;
  private volumesReported = '';
  private volumesReportedAt = 0;
  private volumesUnsupported = false;
  /** Stops of past tenures' stateful replicas confirmed to the server (replica → tenure reported under). */
  private readonly confirmed = new Map<string, number>();
  /** The quorum rule's agent half: peers, membership copy, confirmations (agent/peer/node-peer.ts). */
  private readonly peer: NodePeer;
  private readonly record: AgentOptions['record'];

  constructor(private readonly opts: AgentOptions) {
    this.now = opts.now ?? Date.now;
    this.record = { ...opts.record };
    this.volumes = new VolumeDir(opts.state.dir);
    this.client = new AgentClient(opts.server, opts.node, undefined, opts.fetch);
    this.cache = new DesiredCache(opts.state, this.now);
    opts.state.onReport = (line, d) => (this.log(line), this.event(d ? 'state-problem' : 'state-resolved', d ? `${d.code} ${d.message}` : line));
    if (opts.network) {
      this.policy = new PolicyFollower({
        client: this.client,
        netns: opts.network,
        replicas: () => [...this.slots.values()].flatMap((s) => (s.handle && s.assignment ? [{ replica: s.replica, spec: s.assignment.spec }] : [])),
        pollWaitMs: opts.pollWaitMs ?? 30_000,
        isClosed: () => this.closed,
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        log: (l) => this.log(l),
        event: (kind, message, replica) => this.event(kind, message, replica),
      });
    }
    this.logServer = new LogServer({
      node: opts.node,
      client: this.client,
      runtime: opts.runtime,
      holds: (replica) => this.slots.has(replica),
      pollWaitMs: opts.pollWaitMs ?? 30_000,
      isClosed: () => this.closed,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      log: (l) => this.log(l),
      ...(opts.logLimits ? { limits: opts.logLimits } : {}),
    });
    this.leases = new LeaseKeeper({
      node: opts.node,
      token: opts.token,
      ttl: Math.max(FENCE.minTtlSeconds, opts.leaseTtlSeconds ?? QUORUM.defaultTtlSeconds),
      client: this.client,
      state: opts.state,
      runtime: opts.runtime,
      record: this.record,
      now: this.now,
      log: (l) => this.log(l),
      event: (kind, message) => this.event(kind, message),
      changed: () => this.kick(),
    });
    this.peer = new NodePeer({
      node: opts.node,
      state: opts.state,
      listen: opts.peer?.listen ?? '127.0.0.1:0',
      advertise: opts.peer?.advertise ?? '',
      now: this.now,
      fence: this.leases.fence,
      keepaliveSettled: () => this.leases.keepaliveInFlight,
      ttlMs: () => (this.leases.lease?.ttl ?? Math.max(FENCE.minTtlSeconds, opts.leaseTtlSeconds ?? QUORUM.defaultTtlSeconds)) * 1000,
      log: (l) => this.log(l),
      ...(opts.peer?.fetch ? { fetch: opts.peer.fetch } : {}),
    });
  }

  /** Adopt what the runtime holds, restore the cached desired state, and start the loops. */
  async start(): Promise<void> {
    this.desired = this.cache.load();
    // Never registered (or the lease is known lost): nothing runs until registration.
    if (!this.leases.restore()) this.fenced = true;
    else this.peer.resume();
    this.unsubscribe = this.opts.runtime.subscribe((e) => this.onRuntimeEvent(e));
    for (const s of await this.opts.runtime.list({ usage: false })) this.adopt(s);
    // Published with the registration: where peers ask, and the key the answers are signed with.
    this.record.peer = await this.peer.start();
    this.timer = setInterval(() => this.tick(), FENCE.checkMs);
    this.loops.push(this.leaseLoop(), this.pollLoop(), this.logLoop(), this.peer.loop(() => this.closed, (ms) => this.sleepQuietly(ms), () => this.kick()));
    if (this.policy) this.loops.push(this.policy.loop());
    this.kick();
  }

  /** Stop the agent's loops. Workloads keep running: an agent shutdown is not a node drain. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    this.logServer.close();
    await this.peer.close();
    this.client.abort();
    this.wake?.();
    await Promise.allSettled(this.loops);
    await this.reconcileChain;
  }

  /** For tests and the CLI status line. */
  status(): { registered: boolean; tenure: number | undefined; fenced: boolean; slots: { replica: string; state: string }[] } {
    return { registered: this.leases.registered, tenure: this.leases.lease?.tenure, fenced: this.fenced, slots: [...this.slots.values()].map((s) => ({ replica: s.replica, state: s.state })) };
  }

  private lastServerError = '';
  /** Failed calls so far, and how many of them the last full re-send came after. */
  private failures = 0;
  private resentAfter = 0;

  private log(line: string): void {
    (this.opts.log ?? ((l: string) => process.stderr.write(`${new Date().toISOString()} agent ${this.opts.node}: ${l}\n`)))(line);
  }

  private event(kind: string, message: string, replica?: string): void {
    this.events.push({ node: this.opts.node, kind, message, at: this.now(), ...(replica === undefined ? {} : { replica }) });
    if (this.events.length > 1000) this.events.splice(0, this.events.length - 1000);
  }

  private adopt(s: WorkloadStatus): void {
    const slot = this.slots.get(s.handle.replica) ?? newSlot(s.handle.replica);
    slot.handle = s.handle;
    this.applyStatus(slot, s);
    this.slots.set(slot.replica, slot);
    this.log(`adopted ${slot.replica} (${slot.state})`);
    this.event('adopted', `re-adopted ${slot.state} workload after an agent restart`, slot.replica);
  }

  private applyStatus(slot: Slot, s: WorkloadStatus): void {
    if (s.state === 'exited') {
      slot.state = exitState(slot, s.exitCode ?? 0, s.oom ?? false);
      if (s.exitCode !== undefined) slot.exitCode = s.exitCode;
      this.noteStartFailure(slot, s);
    } else if (s.state === 'lost') {
      slot.state = 'lost';
      if (s.lost) slot.diagnostic = s.lost;
    } else {
      slot.state = s.state;
    }
    // A failed pull attempt's diagnostic stays on the replica while the runtime retries; it goes once the pull works.
    if (s.state === 'pulling' && s.pull?.diagnostic) slot.diagnostic = s.pull.diagnostic;
    else if (s.state !== 'pulling' && slot.pull?.diagnostic && slot.diagnostic?.code === slot.pull.diagnostic.code) delete slot.diagnostic;
    if (s.state === 'pulling' && s.pull) slot.pull = s.pull;
    else delete slot.pull;
    // The digest a pull resolved is known after start() returned: the runtime's handle has it.
    if (slot.handle && s.handle.id === slot.handle.id && s.handle.image !== '') slot.handle.image = s.handle.image;
    if (s.usage) slot.usage = s.usage;
    if (s.init) slot.init = s.init;
    // A workload that ended has no address any more (its namespace may be gone, or reused).
    if (s.address !== undefined && s.state !== 'exited' && s.state !== 'lost') slot.address = s.address;
    else delete slot.address;
    if (s.ports !== undefined && slot.address !== undefined) slot.ports = s.ports;
    else delete slot.ports;
  }

  /** A command that could not be started gets CCA-E0530 (command, node, runtime, fix) instead of a bare exit code. */
  private noteStartFailure(slot: Slot, s: WorkloadStatus): void {
    const a = slot.assignment;
    if (!a || slot.livenessFailed || s.state !== 'exited' || !s.exitDetail) return;
    const d = startFailure({ runtime: this.opts.runtime.name, node: this.opts.node, replica: slot.replica, service: a.service, image: a.spec.image, argv: argvOf(a.spec), exitCode: s.exitCode, detail: s.exitDetail });
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
        void Promise.resolve()
          .then(() => this.opts.runtime.inspect(h))
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
          });
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

  // ---- loops ---------------------------------------------------------------------------

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async leaseLoop(): Promise<void> {
    while (!this.closed) {
      let next: number = FENCE.keepaliveRetryMs;
      try {
        next = await this.leases.step();
        this.unreachableLogged = false;
        this.lastServerError = '';
      } catch (e) {
        this.onCallError(e, 'lease');
      }
      await this.sleep(next);
    }
  }

  private onCallError(e: unknown, what: string): void {
    if (this.closed) return;
    // After any failed call, everything is re-sent once the server answers again: what it
    // holds may be older than what we last sent (a store restored, a write lost in the outage).
    this.failures++;
    if (e instanceof UnreachableError) {
      if (!this.unreachableLogged) this.log(`${e.diagnostic.code} ${e.message} (${what}; retrying)`);
      this.unreachableLogged = true;
    } else if (e instanceof ServerError) {
      if (e.status === 401) {
        this.leases.credentialRefused(e, what);
      } else if (e.status === 409 && this.leases.registered) {
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

  /** Log requests once enrolled (agent/log-server.ts). */
  private async logLoop(): Promise<void> {
    while (!this.closed && this.client.credential === '') await this.sleepQuietly(100);
    if (!this.closed) await this.logServer.loop();
  }

  /** A pause that a kick does not end (this.sleep's wake belongs to the lease loop). */
  private sleepQuietly(ms: number): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
  }

  private async pollLoop(): Promise<void> {
    let after = 0;
    let backoff: number = BACKOFF.initialMs;
    while (!this.closed) {
      if (this.client.credential === '') {
        await this.sleep(100);
        continue;
      }
      try {
        const sentAt = this.now();
        const r = await this.client.assignments(after, this.opts.pollWaitMs ?? 30_000);
        this.peer.learned(r.membership, sentAt);
        if (r.changed || after === 0) {
          this.desired = r.assignments.filter((a) => a.node === this.opts.node);
          this.revision = r.revision;
          this.cache.answered(r.revision, this.desired);
          this.kick();
        }
        after = r.revision;
        backoff = BACKOFF.initialMs;
      } catch (e) {
        this.onCallError(e, 'assignments');
        await this.sleep(backoff + Math.floor(Math.random() * backoff));
        backoff = Math.min(backoff * 2, BACKOFF.maxMs);
      }
    }
  }

  // ---- the periodic tick: fence, runtime refresh, health, reports ------------------------

  private tick(): void {
    if (this.closed) return;
    const now = this.now();
    if (this.fenceDue(now) !== this.fenced) this.kick();
    if (now - this.lastRefresh >= 1_000) {
      this.lastRefresh = now;
      this.kick();
      void this.refresh(now - this.lastUsage >= (this.opts.reportEveryMs ?? 5_000));
    }
    this.runProbes(now);
    void this.report(now);
    if (now - this.lastVolumeSync >= VOLUME_SYNC_MS) {
      this.lastVolumeSync = now;
      void this.syncVolumes(now);
    }
  }

  /**
   * Volumes: create what the storage controller wants here, delete what it no longer wants
   * and no assignment here mounts, and report what the node holds (under the tenure).
   */
  private async syncVolumes(now: number): Promise<void> {
    const lease = this.leases.lease;
    if (this.syncingVolumes || this.volumesUnsupported || !this.leases.registered || !lease) return;
    this.syncingVolumes = true;
    try {
      const { volumes } = await this.client.volumes();
      const wanted = new Set(volumes.map((v) => `${v.service}/${v.volume}`));
      for (const a of this.desired) for (const v of a.spec.volumes) wanted.add(`${a.service}/${v.name}`);
      for (const v of volumes) {
        try {
          this.volumes.ensure(v.service, v.volume, v.sizeBytes);
        } catch (e) {
          // A volume whose names would climb out of the volumes directory is not made; the others are.
          if (!(e instanceof Refusal)) throw e;
          this.log(`volume refused: ${e.reason}`);
        }
      }
      for (const v of this.volumes.list()) {
        if (wanted.has(`${v.service}/${v.volume}`)) continue;
        this.volumes.remove(v.service, v.volume);
        this.log(`deleted volume ${v.volume} of ${v.service}: no longer wanted on this node`);
        this.event('volume-deleted', `volume ${v.volume} of ${v.service} deleted (released by the storage controller)`);
      }
      const report = this.volumes.list().map((v) => {
        const over = v.usedBytes > v.sizeBytes ? makeDiagnostic('CCA-E0521', { volume: v.volume, service: v.service, node: this.opts.node, usedBytes: v.usedBytes, sizeBytes: v.sizeBytes }) : undefined;
        return { service: v.service, volume: v.volume, state: 'ready' as const, path: v.path, sizeBytes: v.sizeBytes, usedBytes: v.usedBytes, ...(over ? { diagnostic: { code: over.code, message: over.message } } : {}), at: now };
      });
      // Sent when something but the time changed (or every 30 s): the storage controller watches these.
      const fp = JSON.stringify(report.map(({ at: _at, ...rest }) => rest));
      if (fp === this.volumesReported && now - this.volumesReportedAt < VOLUME_REFRESH_MS) return;
      await this.client.observedVolumes(lease.tenure, report);
      this.volumesReported = fp;
      this.volumesReportedAt = now;
    } catch (e) {
      // A server without the volume routes (an older version): say so once, stop asking.
      if (e instanceof ServerError && e.status === 404 && e.diagnostic.code === 'CCA-E0604') {
        this.volumesUnsupported = true;
        this.log('the server has no volume routes: volumes are created for replicas but not reported');
      } else this.onCallError(e, 'volumes');
    } finally {
      this.syncingVolumes = false;
    }
  }

  private async refresh(withUsage: boolean): Promise<void> {
    try {
      const statuses = await this.opts.runtime.list({ usage: withUsage });
      if (withUsage) this.lastUsage = this.now();
      for (const s of statuses) {
        const slot = this.slots.get(s.handle.replica);
        if (slot?.handle?.id === s.handle.id && !TERMINAL.has(slot.state)) this.applyStatus(slot, s);
      }
    } catch (e) {
      this.log(`runtime list failed: ${messageOf(e)}`);
    }
  }

  private runProbes(now: number): void {
    for (const slot of this.slots.values()) {
      const a = slot.assignment;
      if (slot.state !== 'running' || !slot.handle || !a) continue;
      for (const kind of ['liveness', 'readiness'] as const) {
        const check = a.spec.health[kind];
        if (!check) continue;
        const cs = (slot[kind] ??= new CheckState(check, now));
        if (!cs.due(now)) continue;
        const handle = slot.handle;
        void cs.run(now, probeFor(check, a.spec, this.opts.runtime, handle, slot.address)).then((changed) => {
          if (changed) this.event(kind, `${kind} ${cs.state}`, slot.replica);
          // Not only on the change: a stop that failed leaves it running, and the next failing probe tries again.
          if (kind === 'liveness' && cs.state === 'failing') void this.livenessFailed(slot, handle, cs);
        });
      }
    }
  }

  /**
   * Liveness failed past its threshold: stop the workload and report it `failed` with the
   * reason once it has exited. The agent restarts nothing itself: the replica controller
   * retires the replica and replaces it (new id) per the restart policy, citing this report.
   */
  private async livenessFailed(slot: Slot, handle: WorkloadHandle, cs: CheckState): Promise<void> {
    const a = slot.assignment;
    if (slot.handle?.id !== handle.id || slot.state !== 'running' || !a) return;
    const d = makeDiagnostic('CCA-E0513', { probe: probeText(cs.check, a.spec), failures: cs.check.failureThreshold, replica: slot.replica });
    slot.livenessFailed = { code: d.code, message: d.message };
    slot.diagnostic = slot.livenessFailed;
    slot.state = 'stopping';
    this.log(`${slot.replica}: ${d.code} ${d.message}`);
    this.event('liveness-failed', `${d.code} ${d.message}`, slot.replica);
    try {
      await this.opts.runtime.stop(handle, a.spec.stopGraceMs);
    } catch (e) {
      this.log(`stopping ${slot.replica} after its liveness failure failed: ${messageOf(e)}`);
    }
    this.kick();
  }

  private async report(now: number): Promise<void> {
    const lease = this.leases.lease;
    // Without a credential every report would be refused: wait for the enrollment.
    if (this.reporting || !this.leases.registered || !lease || this.client.credential === '') return;
    const every = this.opts.reportEveryMs ?? 5_000;
    const slow = Math.max(every, this.opts.usageEveryMs ?? 30_000);
    const failures = this.failures;
    const all = failures !== this.resentAfter;
    const due: { slot: Slot; obs: Observation; fp: string }[] = [];
    // Only replicas still assigned here: the server refuses a report on any other
    // (CCA-E0634), and with it the whole batch.
    const assigned = new Set(this.desired.map((a) => a.replica));
    for (const slot of this.slots.values()) {
      if (slot.assignment?.tenure !== lease.tenure || slot.settling || !assigned.has(slot.replica)) continue;
      const obs = observationOf(slot, this.opts.node, lease.tenure, now, this.opts.record.address ?? '');
      if (!obs) continue;
      const fp = fingerprint(obs);
      const refresh = slot.assignment.spec.autoscale ? every : slow;
      if (all || fp !== slot.reported || now - slot.reportedAt >= refresh) due.push({ slot, obs, fp });
    }
    const confirmations = this.stopConfirmations(lease.tenure, now);
    const events = this.events.slice(0, 100);
    if (due.length === 0 && events.length === 0 && confirmations.length === 0) return;
    this.reporting = true;
    try {
      if (due.length > 0) {
        await this.client.observations(lease.tenure, due.map((d) => d.obs));
        for (const d of due) {
          d.slot.reported = d.fp;
          d.slot.reportedAt = now;
        }
      }
      // A call that failed while this report ran asks for another full re-send.
      if (all) this.resentAfter = failures;
      if (confirmations.length > 0) {
        await this.client.observations(lease.tenure, confirmations);
        for (const c of confirmations) this.confirmed.set(c.replica, lease.tenure);
      }
      if (events.length > 0) {
        await this.client.events(lease.tenure, events);
        this.events.splice(0, events.length);
      }
    } catch (e) {
      this.onCallError(e, 'report');
    } finally {
      this.reporting = false;
    }
  }

  /**
   * The proof a stateful replica of a past tenure needs to be replaced (docs/volumes.md):
   * this agent, registered again under `tenure`, reports it stopped — it holds no slot for
   * it (everything the runtime had was adopted at start) or the slot has exited. A replica
   * still stopping is not confirmed yet.
   */
  private stopConfirmations(tenure: number, now: number): Observation[] {
    const out: Observation[] = [];
    const assigned = new Set(this.desired.map((a) => a.replica));
    for (const r of this.confirmed.keys()) if (!assigned.has(r)) this.confirmed.delete(r);
    for (const a of this.desired) {
      if (a.tenure >= tenure || a.desired !== 'run' || a.spec.volumes.length === 0 || this.confirmed.get(a.replica) === tenure) continue;
      const slot = this.slots.get(a.replica);
      if (slot && !TERMINAL.has(slot.state)) continue;
      const d = makeDiagnostic('CCA-E0522', { replica: a.replica, tenure: a.tenure, node: this.opts.node, current: tenure });
      out.push({
        replica: a.replica,
        service: a.service,
        node: this.opts.node,
        tenure,
        state: slot?.state ?? 'exited',
        ...(slot?.exitCode === undefined ? {} : { exitCode: slot.exitCode }),
        restarts: 0,
        health: { liveness: 'unknown', readiness: 'unknown' },
        image: '',
        diagnostic: { code: d.code, message: d.message },
        at: now,
      });
    }
    return out;
  }

  // ---- reconcile -------------------------------------------------------------------------

  /** Ask for a reconcile; runs are serialised and coalesced. */
  private kick(): void {
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

  private async reconcile(): Promise<void> {
    this.updateFenced(this.now());
    // A workload the cache cannot tell about is left alone until the server answers (agent/desired.ts); a fence still stops it.
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
        await this.opts.runtime.stop(slot.handle!, action.graceMs);
        this.log(`stopping ${slot.replica} (grace ${action.graceMs} ms${this.fenced ? ', fenced' : ''})`);
      } else {
        if (slot.handle) await this.opts.runtime.remove(slot.handle);
        this.slots.delete(slot.replica);
      }
    }
    if (toStart.length === 0) return;
    const catalogue = await this.opts.runtime.catalogue();
    // A few starts at once: runtimes spend most of a start waiting (ctr, fork/exec).
    const queue = [...toStart];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await this.startSlot(next[0], next[1], catalogue);
    };
    await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, queue.length) }, worker));
    await this.refresh(false);
    // New namespaces start with the fallback policy; put the node's rules in place now.
    if (this.policy) void this.policy.sync();
  }

  /** The fence point passed, and no majority of the members confirms the control plane itself is down (docs/fencing.md). */
  private fenceDue(now: number): boolean {
    return this.leases.fence.due(now) && !this.peer.quorum.confirmsOutage(now);
  }

  private updateFenced(now: number): void {
    const due = this.fenceDue(now);
    if (due === this.fenced) return;
    this.fenced = due;
    if (due) {
      const d = makeDiagnostic('CCA-E0506', { node: this.opts.node, sinceMs: this.leases.fence.sinceRenewal(now), marginMs: FENCE.marginMs });
      this.log(`${d.code} ${d.message}`);
      this.event('fenced', d.message);
    } else {
      this.log('lease held: workloads may run');
      this.event('unfenced', 'lease held: workloads may run');
    }
  }

  /** A spec the agent will not run (CCA-E0531): held like an image it does not have, never retried. */
  private refuse(slot: Slot, a: Assignment, r: Refusal): void {
    const d = makeDiagnostic('CCA-E0531', { node: this.opts.node, replica: a.replica, service: a.service, reason: r.reason });
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
      if (digest === undefined && !this.opts.runtime.pulls) {
        const known = Object.keys(catalogue).sort().join(', ') || '(empty)';
        const d = makeDiagnostic('CCA-E0501', { service: a.service, image: a.spec.image, node: this.opts.node, known });
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
      checkAssignment(a);
      const dir = this.opts.state.replicaDir(a.replica);
      const { files, env } = materialize(dir, a.spec);
      const volumes = this.volumes.mountsFor(a.spec);
      slot.state = 'starting';
      slot.fenced = false;
      delete slot.exitCode;
      delete slot.diagnostic;
      delete slot.liveness;
      delete slot.readiness;
      this.policy?.forget(a.replica);
      delete slot.livenessFailed;
      delete slot.address;
      delete slot.ports;
      slot.handle = await this.opts.runtime.start({ replica: a.replica, service: a.service, spec: a.spec, image, env, files, volumes, dir });
      this.log(`started ${a.replica} (${a.service})`);
      this.event('started', `started on the ${this.opts.runtime.name} runtime`, a.replica);
      if (!this.opts.network && a.spec.network.allow.length > 0) {
        const d = makeDiagnostic('CCA-E0529', { service: a.service, node: this.opts.node, replica: a.replica });
        this.log(`${d.code} ${d.message}`);
        this.event('network-policy-unenforced', `${d.code} ${d.message}`, a.replica);
      }
    } catch (e) {
      if (e instanceof Refusal) return this.refuse(slot, a, e);
      const reason = messageOf(e);
      // containerd refuses at task start when the command is missing or not executable (runc's exec error).
      const noCommand = startFailure({ runtime: this.opts.runtime.name, node: this.opts.node, replica: a.replica, service: a.service, image: a.spec.image, argv: argvOf(a.spec), exitCode: undefined, detail: /executable file not found|no such file or directory|permission denied/i.test(reason) ? { spawnError: { message: reason } } : undefined });
      const d = noCommand ?? makeDiagnostic('CCA-E0504', { runtime: this.opts.runtime.name, replica: a.replica, reason });
      slot.state = 'failed';
      slot.diagnostic = { code: d.code, message: d.message };
      this.log(`${d.code} ${d.message}`);
      this.event('start-failed', d.message, a.replica);
    }
  }
}

/**
 * What an exit means: a stop we asked for ends `exited` whatever the signal's code, unless
 * we stopped it for failing its liveness check; a workload that died on its own is `failed`.
 */
function exitState(slot: Slot, exitCode: number, oom: boolean): Observation['state'] {
  if (slot.livenessFailed) return 'failed';
  return exitCode === 0 || (slot.state === 'stopping' && !oom) ? 'exited' : 'failed';
}
