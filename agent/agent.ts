import { makeDiagnostic } from '../core/diagnostics/index.js';
import type { Assignment, NodeEvent, NodeRecordInput, Observation } from '../core/model/index.js';
import { AgentClient, ServerError, UnreachableError } from './client.js';
import { FENCE, FenceClock } from './fence.js';
import { CheckState, probeFor } from './health.js';
import { materialize } from './materialize.js';
import { plan, type SlotView } from './plan.js';
import type { Runtime, RuntimeEvent, WorkloadStatus } from './runtime.js';
import { fingerprint, newSlot, observationOf, type Slot } from './slot.js';
import type { LeaseState, StateDir } from './state.js';

export const AGENT_VERSION = '0.1.0';

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
  /** Observations are re-sent (with fresh usage) at least this often. */
  reportEveryMs?: number;
  now?: () => number;
  log?: (line: string) => void;
}

const TERMINAL = new Set<Observation['state']>(['exited', 'failed', 'lost']);
const BACKOFF = { initialMs: 200, maxMs: 5_000 } as const;
const START_CONCURRENCY = 4;

/**
 * The node agent: registers on a lease, keeps it alive, long-polls its assignments, reconciles
 * the runtime against them, and reports. It restarts nothing by itself (an exited replica is
 * reported; the control plane applies the restart policy with a new replica), runs what it
 * last knew while the server is away, and fences itself before its lease could expire.
 */
export class Agent {
  private readonly client: AgentClient;
  private readonly fence: FenceClock;
  private readonly slots = new Map<string, Slot>();
  private readonly events: NodeEvent[] = [];
  private readonly now: () => number;
  private readonly ttl: number;
  private desired: Assignment[] = [];
  private revision = 0;
  private lease: LeaseState | undefined;
  private registered = false;
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

  constructor(private readonly opts: AgentOptions) {
    this.now = opts.now ?? Date.now;
    this.ttl = Math.max(FENCE.minTtlSeconds, opts.leaseTtlSeconds ?? 10);
    this.fence = new FenceClock(this.ttl);
    this.client = new AgentClient(opts.server, opts.node);
  }

  /** Adopt what the runtime holds, restore the cached desired state, and start the loops. */
  async start(): Promise<void> {
    const st = this.opts.state;
    this.client.credential = st.credential() ?? '';
    this.lease = st.lease() ?? undefined;
    const cached = st.desired();
    this.desired = cached.assignments;
    const fenceAt = st.fenceAt();
    if (this.lease && fenceAt !== undefined) {
      this.fence.renewed(fenceAt + FENCE.marginMs - this.lease.ttl * 1000, this.lease.ttl);
    } else {
      // Never registered (or the lease is known lost): nothing runs until registration.
      this.fence.lost();
      this.fenced = true;
    }
    this.unsubscribe = this.opts.runtime.subscribe((e) => this.onRuntimeEvent(e));
    for (const s of await this.opts.runtime.list({ usage: false })) this.adopt(s);
    this.timer = setInterval(() => this.tick(), FENCE.checkMs);
    this.loops.push(this.leaseLoop(), this.pollLoop());
    this.kick();
  }

  /** Stop the agent's loops. Workloads keep running: an agent shutdown is not a node drain. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    this.client.abort();
    this.wake?.();
    await Promise.allSettled(this.loops);
    await this.reconcileChain;
  }

  /** For tests and the CLI status line. */
  status(): { registered: boolean; tenure: number | undefined; fenced: boolean; slots: { replica: string; state: string }[] } {
    return { registered: this.registered, tenure: this.lease?.tenure, fenced: this.fenced, slots: [...this.slots.values()].map((s) => ({ replica: s.replica, state: s.state })) };
  }

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
      slot.state = (s.exitCode ?? 0) === 0 || (slot.state === 'stopping' && !s.oom) ? 'exited' : 'failed';
      if (s.exitCode !== undefined) slot.exitCode = s.exitCode;
    } else if (s.state === 'lost') {
      slot.state = 'lost';
      if (s.lost) slot.diagnostic = s.lost;
    } else {
      slot.state = s.state;
    }
    if (s.usage) slot.usage = s.usage;
    if (s.init) slot.init = s.init;
  }

  private onRuntimeEvent(e: RuntimeEvent): void {
    const slot = this.slots.get(e.replica);
    if (!slot) return;
    if (e.kind === 'exited') {
      // A stop we asked for ends `exited` whatever the signal's code; only a workload that
      // died on its own (or never got going) is `failed`.
      slot.state = e.exitCode === 0 || (slot.state === 'stopping' && !e.oom) ? 'exited' : 'failed';
      slot.exitCode = e.exitCode;
      if (e.oom) {
        const d = makeDiagnostic('CCA-E0511', { replica: e.replica, service: slot.handle?.service ?? '', memoryBytes: slot.assignment?.spec.resources.memoryBytes ?? 0 });
        slot.diagnostic = { code: d.code, message: d.message };
      }
      const h = slot.handle;
      if (h) void this.opts.runtime.inspect(h).then((s) => s.init && (slot.init = s.init), () => undefined);
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
      let next = (this.ttl * 1000) / FENCE.keepalivesPerTtl;
      try {
        if (!this.registered) await this.register();
        else next = await this.keepalive(next);
        this.unreachableLogged = false;
      } catch (e) {
        next = FENCE.keepaliveRetryMs;
        this.onCallError(e, 'lease');
      }
      await this.sleep(next);
    }
  }

  private async ensureCredential(): Promise<void> {
    if (this.client.credential !== '') return;
    const credential = await this.client.enroll(this.opts.token);
    this.opts.state.saveCredential(credential);
    this.log('enrolled');
  }

  private async register(): Promise<void> {
    await this.ensureCredential();
    const images = (await this.opts.runtime.catalogue()) ?? {};
    const record: NodeRecordInput = { ...this.opts.record, name: this.opts.node, images, runtime: this.opts.runtime.name, agentVersion: AGENT_VERSION };
    const sentAt = this.now();
    const previous = this.lease;
    const r = await this.client.register(record, this.ttl, previous?.lease);
    this.lease = { lease: r.lease, tenure: r.tenure, ttl: r.ttl };
    this.opts.state.saveLease(this.lease);
    this.registered = true;
    this.fence.renewed(sentAt, r.ttl);
    this.saveFence();
    const kept = previous?.tenure === r.tenure;
    this.log(`registered: lease ${r.lease}, tenure ${r.tenure}${kept ? ' (kept)' : ''}`);
    this.event('registered', `registered with tenure ${r.tenure}${kept ? ' (same tenure as before)' : ''}`);
    this.kick();
  }

  /** One keepalive; returns when to send the next. */
  private async keepalive(interval: number): Promise<number> {
    const lease = this.lease;
    if (!lease) return interval;
    const sentAt = this.now();
    try {
      const r = await this.client.keepalive(lease.lease);
      this.fence.renewed(sentAt, r.ttl);
      this.saveFence();
      if (this.fenced) this.kick();
      return interval;
    } catch (e) {
      if (e instanceof ServerError && e.storeUnavailable) {
        // Lease expiry is a store write: it cannot happen while the server says the store is down.
        this.fence.renewed(sentAt);
        this.saveFence();
        return FENCE.keepaliveRetryMs;
      }
      if (e instanceof ServerError && (e.status === 404 || e.diagnostic.code === 'CCA-E0107')) {
        this.leaseLost('the lease expired');
        return 0;
      }
      throw e;
    }
  }

  private leaseLost(why: string): void {
    if (!this.registered && !this.lease) return;
    this.log(`lease lost (${why}): stopping workloads of tenure ${this.lease?.tenure}, registering again`);
    this.event('lease-lost', `${why}; workloads of tenure ${this.lease?.tenure} stopped`);
    this.fence.lost();
    this.saveFence();
    this.registered = false;
    this.lease = undefined;
    this.opts.state.saveLease(undefined);
    this.kick();
  }

  private saveFence(): void {
    const at = this.fence.fenceAt();
    if (at !== undefined) this.opts.state.saveFenceAt(Number.isFinite(at) ? at : 0);
  }

  private onCallError(e: unknown, what: string): void {
    if (this.closed) return;
    if (e instanceof UnreachableError) {
      if (!this.unreachableLogged) this.log(`${e.diagnostic.code} ${e.message} (${what}; retrying)`);
      this.unreachableLogged = true;
    } else if (e instanceof ServerError) {
      if (e.status === 401) {
        this.log(`${makeDiagnostic('CCA-E0509', { node: this.opts.node, reason: e.diagnostic.message }).message}; enrolling again`);
        this.client.credential = '';
      } else if (e.status === 409 && this.registered) {
        this.leaseLost('the server refused our tenure');
      } else {
        this.log(`${what}: ${e.message}`);
      }
    } else {
      this.log(`${what}: unexpected ${e instanceof Error ? e.message : String(e)}`);
    }
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
        const r = await this.client.assignments(after, this.opts.pollWaitMs ?? 30_000);
        if (r.changed || after === 0) {
          this.desired = r.assignments.filter((a) => a.node === this.opts.node);
          this.revision = r.revision;
          this.opts.state.saveDesired(r.revision, this.desired);
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
    if (this.fence.due(now) !== this.fenced) this.kick();
    if (now - this.lastRefresh >= 1_000) {
      this.lastRefresh = now;
      this.kick();
      void this.refresh(now - this.lastUsage >= (this.opts.reportEveryMs ?? 5_000));
    }
    this.runProbes(now);
    void this.report(now);
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
      this.log(`runtime list failed: ${e instanceof Error ? e.message : String(e)}`);
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
        void cs.run(now, probeFor(check, a.spec, this.opts.runtime, slot.handle)).then((changed) => {
          if (changed) this.event(kind, `${kind} ${cs.state}`, slot.replica);
        });
      }
    }
  }

  private async report(now: number): Promise<void> {
    const lease = this.lease;
    if (this.reporting || !this.registered || !lease) return;
    const every = this.opts.reportEveryMs ?? 5_000;
    const due: { slot: Slot; obs: Observation; fp: string }[] = [];
    for (const slot of this.slots.values()) {
      if (slot.assignment?.tenure !== lease.tenure) continue;
      const obs = observationOf(slot, this.opts.node, lease.tenure, now);
      if (!obs) continue;
      const fp = fingerprint(obs);
      if (fp !== slot.reported || now - slot.reportedAt >= every) due.push({ slot, obs, fp });
    }
    const events = this.events.slice(0, 100);
    if (due.length === 0 && events.length === 0) return;
    this.reporting = true;
    try {
      if (due.length > 0) {
        await this.client.observations(lease.tenure, due.map((d) => d.obs));
        for (const d of due) {
          d.slot.reported = d.fp;
          d.slot.reportedAt = now;
        }
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
        this.log(`reconcile failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
  }

  private async reconcile(): Promise<void> {
    this.updateFenced(this.now());
    const views: SlotView[] = [...this.slots.values()].map((s) => ({
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
    for (const action of plan(views, this.desired, this.lease?.tenure, this.fenced)) {
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
  }

  private updateFenced(now: number): void {
    const due = this.fence.due(now);
    if (due === this.fenced) return;
    this.fenced = due;
    if (due) {
      const d = makeDiagnostic('CCA-E0506', { node: this.opts.node, sinceMs: this.fence.sinceRenewal(now), marginMs: FENCE.marginMs });
      this.log(`${d.code} ${d.message}`);
      this.event('fenced', d.message);
    } else {
      this.log('lease held: workloads may run');
      this.event('unfenced', 'lease held: workloads may run');
    }
  }

  private async startSlot(slot: Slot, a: Assignment, catalogue: Record<string, string> | undefined): Promise<void> {
    let image = '';
    if (catalogue !== undefined) {
      const digest = catalogue[a.spec.image];
      if (digest === undefined) {
        const known = Object.keys(catalogue).sort().join(', ') || '(empty)';
        const d = makeDiagnostic('CCA-E0501', { service: a.service, image: a.spec.image, node: this.opts.node, known });
        slot.held = true;
        slot.state = 'failed';
        slot.diagnostic = { code: d.code, message: d.message };
        this.log(`${a.replica}: ${d.code} ${d.message}`);
        this.event('held', `${d.code} ${d.message}`, a.replica);
        return;
      }
      image = digest;
    }
    const dir = this.opts.state.replicaDir(a.replica);
    try {
      const { files, env } = materialize(dir, a.spec);
      slot.state = 'starting';
      slot.fenced = false;
      delete slot.exitCode;
      delete slot.diagnostic;
      delete slot.liveness;
      delete slot.readiness;
      slot.handle = await this.opts.runtime.start({ replica: a.replica, service: a.service, spec: a.spec, image, env, files, dir });
      this.log(`started ${a.replica} (${a.service})`);
      this.event('started', `started on the ${this.opts.runtime.name} runtime`, a.replica);
    } catch (e) {
      const d = makeDiagnostic('CCA-E0504', { runtime: this.opts.runtime.name, replica: a.replica, reason: e instanceof Error ? e.message : String(e) });
      slot.state = 'failed';
      slot.diagnostic = { code: d.code, message: d.message };
      this.log(`${d.code} ${d.message}`);
      this.event('start-failed', d.message, a.replica);
    }
  }
}
