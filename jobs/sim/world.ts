import { SimPeerNet } from './peer-net.js';
import { QUORUM } from '../../core/model/quorum.js';
import type { Diagnostic } from '../../core/diagnostics/types.js';
import { buildKey, decodeFact, encodeFact, parseKey } from '../../core/keys.js';
import { serviceSpecSchema, type ServiceSpecInput } from '../../core/model/service.js';
import { MemoryStore } from '../../db/memory.js';
import type { Store, WatchBatch } from '../../db/store.js';
import { changesOfEvents, type Controller } from '../controller.js';
import { controllers as allControllers } from '../controllers/index.js';
import { runStep, StepBook } from '../step-runner.js';
import { WakeTable, type DueStep } from '../wake-table.js';
import { SimAgent, type AgentEvent, type AgentTiming } from './agent.js';
import { AttributingStore, type Component } from './attributing-store.js';
import { GatedStore } from './gated-store.js';
import * as inv from './invariants.js';
import { Rng } from './rng.js';

export interface SimOptions {
  seed: number;
  /** The agents' lease TTL; keepalives and the fence margin are the real agent's (agent/core/fence.ts). */
  ttlSeconds?: number;
  tickMs?: number;
  lostGraceMs?: number;
  /** The quorum rule on (docs/fencing.md): agents register as the API does and ask their peers through the world's peer network; TTL 30 s by default. */
  quorum?: boolean;
  /** Keep at most this many trace lines (the newest). */
  traceLimit?: number;
}

export interface NodeSpec {
  name: string;
  /** The declared address replicas are reached at (host networking); empty = loopback. */
  address?: string;
  zone?: string;
  cpuMillis: number;
  memoryBytes: number;
  labels?: Record<string, string>;
  taints?: string[];
  images?: Record<string, string>;
  /** A replica network ("10.88.1"): each replica gets its own address (network namespaces). */
  subnet?: string;
}

interface Event {
  at: number;
  seq: number;
  label: string;
  fn: () => Promise<void> | void;
}

/** Steps at one virtual instant before we call it a livelock. */
const MAX_STEPS_PER_INSTANT = 2_000;
export const DEFAULT_IMAGES = { 'web:1': 'sha256:web1', 'api:1': 'sha256:api1', 'worker:1': 'sha256:worker1' };

/**
 * A deterministic world: one MemoryStore on a virtual clock, the real controllers woken
 * through the same WakeTable the in-process driver uses (the simulation's own scheduling
 * mode: steps run one at a time, in a seeded order, at virtual instants), simulated agents
 * with a fake runtime, and faults. Safety invariants are checked after every step and
 * every agent tick; liveness ones at quiescence (`checkQuiescent`).
 *
 * Browser-safe: no Node imports here or below.
 */
export class SimWorld {
  t = 0;
  readonly rng: Rng;
  readonly store: MemoryStore;
  readonly agents = new Map<string, SimAgent>();
  readonly trace: string[] = [];
  readonly violations: inv.Violation[] = [];
  readonly diagnostics: Diagnostic[] = [];
  readonly stats = { steps: 0, failedSteps: 0, agentTicks: 0, outages: 0, peerQuestions: 0 };
  readonly controllers: Controller[];
  readonly timing: AgentTiming & { tickMs: number };
  private readonly table: WakeTable;
  private readonly control: GatedStore;
  /** Each controller's view of the store, its writes attributed to it (checked against core/keys.ts). */
  private readonly controlOf = new Map<string, AttributingStore>();
  /** The API's writes (apply, scale, delete, operator requests), attributed to the API. */
  readonly api: AttributingStore;
  private readonly ctrlRng: Rng;
  private readonly agentRng: Rng;
  private readonly book: StepBook;
  private queue: Event[] = [];
  private seq = 0;
  private storeDownSince: number | undefined;
  private storeDownTotal = 0;
  private outageDepth = 0;
  readonly partitions = new Set<string>();
  /** Which nodes can talk to each other (peer questions): same group. Absent = group 0. */
  readonly peerGroups = new Map<string, number>();
  private readonly peerNet = new SimPeerNet((a, b) => (this.peerGroups.get(a) ?? 0) === (this.peerGroups.get(b) ?? 0) && !!this.agents.get(b)?.alive);
  private readonly skews = new Map<string, number>();
  private readonly watch: AsyncIterator<WatchBatch>;
  private consumed = 1;
  readonly evicted = new Set<string>();
  private readonly replaces = new Map<string, string>();
  /** Every proof a `/lost/` record of each replica carried (the record is deleted once released). */
  private readonly lostProofs = new Map<string, Set<string>>();
  private stepsThisInstant = 0;
  private readonly mirror: inv.Mirror = { assigned: new Map(), capacity: new Map() };
  private lastInstant = -1;
  private readonly loads = new Map<string, { curve: (t: number) => number; every: number }>();
  /** A story's own checks: run after every step and agent tick while the store is up, with the step's label (e.g. a controller's name). */
  private readonly checks: ((w: SimWorld, label: string) => Promise<void>)[] = [];

  constructor(readonly opts: SimOptions) {
    this.rng = new Rng(opts.seed);
    this.ctrlRng = this.rng.fork();
    this.agentRng = this.rng.fork();
    const ttlSeconds = opts.ttlSeconds ?? (opts.quorum ? QUORUM.defaultTtlSeconds : 10);
    this.timing = {
      ttlSeconds,
      tickMs: opts.tickMs ?? 1_000,
      ...(opts.quorum ? { quorum: true } : {}),
    };
    // The store's clock stands still while it is down: leases keep the time they had left,
    // as etcd refreshes leases when a leader returns. Nobody can expire a lease meanwhile.
    this.store = new MemoryStore({ now: () => this.storeClock() });
    this.control = new GatedStore(this.store, () => (this.storeDown ? 'store-down' : 'up'));
    this.controllers = allControllers({ node: { lostGraceMs: opts.lostGraceMs ?? 1_000 }, retention: { everyMs: 60_000 } });
    for (const c of this.controllers) this.controlOf.set(c.name, this.attributed(this.control, { kind: 'controller', name: c.name }));
    this.api = this.attributed(this.store, { kind: 'api' });
    this.table = new WakeTable(this.controllers);
    this.table.kickAll(0);
    this.book = new StepBook((d) => {
      this.diagnostics.push(d);
      this.log(`diagnostic ${d.code}: ${d.message}`);
    });
    this.watch = this.store.watch({ prefix: '', prevKv: true })[Symbol.asyncIterator]();
  }

  get storeDown(): boolean {
    return this.storeDownSince !== undefined;
  }

  private storeClock(): number {
    return this.t - this.storeDownTotal - (this.storeDownSince !== undefined ? this.t - this.storeDownSince : 0);
  }

  /** A component's store: a write outside the prefixes core/keys.ts gives it is a violation. */
  private attributed(inner: Store, who: Component): AttributingStore {
    return new AttributingStore(inner, who, (detail) => this.violate(inv.INVARIANTS.singleWriter, detail));
  }

  log(line: string): void {
    this.trace.push(`[${(this.t / 1000).toFixed(3)}s] ${line}`);
    const limit = this.opts.traceLimit ?? 20_000;
    if (this.trace.length > limit) this.trace.splice(0, this.trace.length - limit);
  }

  violate(invariant: string, detail: string): void {
    this.violations.push({ invariant, at: this.t, detail });
    this.log(`VIOLATION ${invariant}: ${detail}`);
  }

  /** Run `fn` at virtual time `at` (a scenario action or fault). */
  at(at: number, label: string, fn: () => Promise<void> | void): void {
    this.queue.push({ at, seq: this.seq++, label, fn });
    this.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  // ── the cluster ────────────────────────────────────────────────────────────────

  addNode(spec: NodeSpec): SimAgent {
    const name = spec.name;
    const gated = new GatedStore(this.store, () => (this.partitions.has(name) ? 'unreachable' : this.storeDown ? 'store-down' : 'up'));
    const record = {
      name,
      ...(spec.address !== undefined ? { address: spec.address } : {}),
      zone: spec.zone ?? 'default',
      labels: spec.labels ?? {},
      taints: spec.taints ?? [],
      capacity: { cpuMillis: spec.cpuMillis, memoryBytes: spec.memoryBytes },
      images: spec.images ?? DEFAULT_IMAGES,
      runtime: 'fake',
    };
    const agent = new SimAgent(record, this.attributed(gated, { kind: 'agent', node: name }), this.timing, (e) => this.onAgentEvent(name, e), { subnet: spec.subnet, serverNow: () => this.t });
    agent.runtime.cpuUsage = (w) => this.cpuUsage(w);
    this.agents.set(name, agent);
    this.scheduleTick(name, this.t + this.agentRng.int(0, this.timing.tickMs));
    this.log(`node ${name} added (zone ${record.zone}, ${spec.cpuMillis}m cpu)`);
    return agent;
  }

  private scheduleTick(name: string, at: number): void {
    this.at(at, `tick ${name}`, async () => {
      const agent = this.agents.get(name)!;
      this.stats.agentTicks++;
      // The agent's peer round (every P = one tick): ask, judge, feed its latch.
      if (this.timing.quorum && agent.alive) this.peerNet.round(agent, this.agents, this.t);
      this.stats.peerQuestions = this.peerNet.questions;
      await agent.tick(this.t + (this.skews.get(name) ?? 0), this.t);
      this.scheduleTick(name, this.t + this.timing.tickMs + this.agentRng.int(-50, 50));
    });
  }

  private onAgentEvent(node: string, e: AgentEvent): void {
    this.log(`agent ${node}: ${e.kind}${e.replica ? ` ${e.replica}` : ''}${e.tenure !== undefined ? ` tenure ${e.tenure}` : ''}${e.detail ? ` (${e.detail})` : ''}`);
    if (e.kind !== 'started' || !e.replica) return;
    // The replaced copy must be stopped before its replacement starts (rule 7's window is
    // the fencing margin, which is spent before the lease can expire).
    const old = this.replaces.get(e.replica);
    if (!old) return;
    for (const [name, a] of this.agents) {
      if (a.runtime.alive().some((w) => w.replica === old)) {
        this.violate(inv.INVARIANTS.fencedBeforeReplacement, `${e.replica} started on ${node} while the replica it replaces, ${old}, still runs on ${name}`);
      }
    }
  }

  /** Apply a service as the API would: validated, written to `/services/<name>`. */
  async apply(input: ServiceSpecInput): Promise<void> {
    const spec = serviceSpecSchema.parse(input);
    await this.api.put(buildKey('service', spec.name), encodeFact('service', spec));
    this.log(`apply ${spec.name} (${spec.replicas} replicas, image ${spec.image})`);
  }

  /**
   * A service's total CPU demand over time (millicores), shared evenly by its running
   * replicas, as a load balancer would. Agents report it like the real one: a sample every
   * `usageEveryMs`, the first one a full period after the workload started.
   */
  setLoad(service: string, curve: (t: number) => number, usageEveryMs = 5_000): void {
    this.loads.set(service, { curve, every: usageEveryMs });
    this.log(`load of ${service} follows a new curve`);
  }

  private cpuUsage(w: { service: string; startedAt: number }): number | undefined {
    const load = this.loads.get(w.service);
    if (!load || this.t - w.startedAt < load.every) return undefined;
    let n = 0;
    for (const a of this.agents.values()) n += a.runtime.alive().filter((r) => r.service === w.service).length;
    const sampledAt = Math.floor(this.t / load.every) * load.every;
    return Math.round(load.curve(sampledAt) / Math.max(1, n));
  }

  async scale(service: string, replicas: number): Promise<void> {
    const kv = await this.store.get(buildKey('service', service));
    if (!kv) return;
    const spec = decodeFact('service', kv.key, kv.value);
    await this.api.put(kv.key, encodeFact('service', { ...spec, replicas }));
    this.log(`scale ${service} to ${replicas}`);
  }

  async deleteService(service: string): Promise<void> {
    await this.api.delete(buildKey('service', service));
    this.log(`delete service ${service}`);
  }

  // ── faults ─────────────────────────────────────────────────────────────────────

  killAgent(node: string): void {
    this.agents.get(node)?.kill();
    this.log(`fault: agent ${node} killed (workloads stay under the supervisor)`);
  }

  restartAgent(node: string): void {
    this.agents.get(node)?.restart();
    this.log(`agent ${node} restarted`);
  }

  powerOff(node: string): void {
    this.agents.get(node)?.powerOff(this.t);
    this.log(`fault: machine ${node} powered off`);
  }

  powerOn(node: string): void {
    this.agents.get(node)?.restart();
    this.log(`machine ${node} powered on`);
  }

  /** Cut nodes off from each other: each group talks only within itself (peer questions). */
  peerSplit(groups: readonly (readonly string[])[]): void {
    this.peerGroups.clear();
    groups.forEach((g, i) => g.forEach((n) => this.peerGroups.set(n, i + 1)));
    this.log(`fault: peers split into ${groups.map((g) => `[${g.join(' ')}]`).join(' ')}`);
  }

  partition(node: string, cut: boolean): void {
    if (cut) this.partitions.add(node);
    else this.partitions.delete(node);
    this.log(`fault: ${node} ${cut ? 'partitioned from' : 'reconnected to'} the control plane`);
  }

  /** Outages nest: overlapping ones keep the store down until the last one ends. */
  setStoreDown(down: boolean): void {
    this.outageDepth = Math.max(0, this.outageDepth + (down ? 1 : -1));
    this.applyOutage();
  }

  /** Every outage over at once (the end of a random schedule). */
  healStore(): void {
    this.outageDepth = 0;
    this.applyOutage();
  }

  private applyOutage(): void {
    const down = this.outageDepth > 0;
    if (down && this.storeDownSince === undefined) {
      this.storeDownSince = this.t;
      this.stats.outages++;
      this.log('fault: store down');
    } else if (!down && this.storeDownSince !== undefined) {
      this.storeDownTotal += this.t - this.storeDownSince;
      this.storeDownSince = undefined;
      this.log('store back');
    }
  }

  skew(node: string, ms: number): void {
    this.skews.set(node, ms);
    this.log(`fault: ${node}'s clock skewed by ${ms} ms`);
  }

  /** A workload exits on its own (a crash), with this exit code. */
  crashReplica(replica: string, code = 1): boolean {
    for (const [name, a] of this.agents) {
      if (a.runtime.workloads.get(replica)?.state === 'running') {
        a.runtime.crash(replica, code);
        this.log(`fault: ${replica} crashed on ${name} with code ${code}`);
        return true;
      }
    }
    return false;
  }

  /** A running replica's readiness probe starts (or stops) failing; it keeps running. */
  setReadiness(replica: string, failing: boolean): boolean {
    for (const [name, a] of this.agents) {
      const w = a.runtime.workloads.get(replica);
      if (w?.state === 'running') {
        w.unready = failing;
        this.log(`fault: ${replica}'s readiness ${failing ? 'fails' : 'passes again'} on ${name}`);
        return true;
      }
    }
    return false;
  }

  /** A running replica's liveness probe fails: its agent stops it on its next pass. */
  failLiveness(replica: string): boolean {
    for (const [name, a] of this.agents) {
      const w = a.runtime.workloads.get(replica);
      if (w?.state === 'running') {
        w.unalive = true;
        this.log(`fault: ${replica}'s liveness fails on ${name}`);
        return true;
      }
    }
    return false;
  }

  failKills(node: string, n: number): void {
    const a = this.agents.get(node);
    if (a) a.runtime.failingStops += n;
    this.log(`fault: the next ${n} stop(s) on ${node} fail`);
  }

  /**
   * A bug's footprint: the allocation record of a node no longer matches its assignments.
   * Written past the single-writer check on purpose: it stands for a scheduler bug.
   */
  async corruptAllocation(node: string): Promise<void> {
    const kv = await this.store.get(buildKey('allocation', node));
    if (!kv) return;
    const a = decodeFact('allocation', kv.key, kv.value);
    await this.store.put(kv.key, encodeFact('allocation', { ...a, used: { ...a.used, cpuMillis: a.used.cpuMillis + 1 } }));
    this.log(`fault: allocation of ${node} corrupted`);
  }

  /** The operator's answer to an open finding: ask the scheduler to repair the node. */
  async requestRepair(node: string): Promise<boolean> {
    const kv = await this.store.get(buildKey('audit', node));
    if (!kv) return false;
    const f = decodeFact('audit', kv.key, kv.value);
    if (!f.open) return false;
    await this.api.put(buildKey('repair', node), encodeFact('repair', { node, requestedBy: 'operator', at: this.t, finding: f.revision }));
    this.log(`operator requests repair of ${node}`);
    return true;
  }

  /**
   * A story's own safety invariant, checked after every step and agent tick like the
   * built-in ones (while the store is up); each string it returns is a violation.
   */
  addCheck(name: string, check: (label: string) => Promise<string[]>): void {
    this.addChecker(async (w, label) => {
      for (const d of await check(label)) w.violate(name, d);
    });
  }

  /** A check that reports its own violations (several invariants from one pass). */
  addChecker(check: (w: SimWorld, label: string) => Promise<void>): void {
    this.checks.push(check);
  }

  // ── running ────────────────────────────────────────────────────────────────────

  async runFor(ms: number): Promise<void> {
    await this.runUntil(this.t + ms);
  }

  async runUntil(target: number): Promise<void> {
    while (this.violations.length === 0) {
      const next = Math.min(this.queue[0]?.at ?? Infinity, this.table.nextAt() ?? Infinity, this.table.fanouts.size > 0 ? this.t : Infinity);
      if (next > target) {
        this.t = Math.max(this.t, target);
        return;
      }
      this.t = Math.max(this.t, next);
      if (this.t !== this.lastInstant) {
        this.lastInstant = this.t;
        this.stepsThisInstant = 0;
      }
      if (!this.storeDown) {
        this.store.expireLeases();
        await this.drain();
      } else {
        // The driver's watch fails too: that alone is worth one report per outage.
        this.book.storeFailed('the watch on the store failed: simulated outage');
      }
      await this.fanOut();
      for (const step of this.rng.shuffle(this.table.take(this.t))) await this.runController(step);
      while (this.queue[0] && this.queue[0].at <= this.t && this.violations.length === 0) {
        const e = this.queue.shift()!;
        await e.fn();
        await this.afterStep(e.label);
      }
    }
  }

  private async fanOut(): Promise<void> {
    for (const c of [...this.table.fanouts]) {
      if (this.storeDown) {
        this.table.wake(c, undefined, this.t + 500); // a placeholder step; see runController
        this.table.fanouts.delete(c);
        continue;
      }
      this.table.fanouts.delete(c);
      for (const s of (await c.subjects?.(this.store)) ?? []) this.table.wake(c, s, this.t);
    }
  }

  private async runController(step: DueStep): Promise<void> {
    const { controller: c, subject } = step;
    if (c.subjectOf && subject === undefined) {
      // A fan-out deferred by an outage: resolve it now.
      this.table.done(step);
      this.table.fanouts.add(c);
      return;
    }
    const before = await this.store.revision();
    const out = await runStep(c, this.controlOf.get(c.name)!, this.t, () => this.ctrlRng.next(), subject);
    this.table.done(step);
    this.stats.steps++;
    if (!out.ok) this.stats.failedSteps++;
    const next = this.book.settle(step.key, out, this.t, () => this.ctrlRng.next());
    if (next !== undefined) this.table.wake(c, subject, next);
    const after = this.storeDown ? before : await this.store.revision();
    if (after !== before || !out.ok) this.log(`${step.key}: ${out.ok ? `wrote revisions ${before + 1}..${after}` : `failed (${out.diagnostic.code})`}`);
    await this.afterStep(step.key);
  }

  private async afterStep(label: string): Promise<void> {
    if (++this.stepsThisInstant > MAX_STEPS_PER_INSTANT) {
      this.violate('no-livelock', `more than ${MAX_STEPS_PER_INSTANT} steps at one instant (last: ${label})`);
      return;
    }
    if (this.storeDown) {
      for (const d of inv.checkSingleCopy(this.agents.values())) this.violate(inv.INVARIANTS.singleCopy, d);
      return;
    }
    await this.drain();
    for (const d of inv.checkOvercommit(this.mirror)) this.violate(inv.INVARIANTS.noOvercommit, d);
    for (const d of inv.checkSingleCopy(this.agents.values())) this.violate(inv.INVARIANTS.singleCopy, d);
    const reports = this.diagnostics.filter((d) => d.code === 'CCA-E0403').length;
    if (reports > this.stats.outages) this.violate(inv.INVARIANTS.storeReportedOnce, `${reports} store-failure reports for ${this.stats.outages} outage(s)`);
    for (const check of this.checks) await check(this, label);
  }

  /** Route every committed change to the wake table, and check new assignments as they appear. */
  private async drain(): Promise<void> {
    const head = await this.store.revision();
    while (this.consumed < head) {
      const r = await this.watch.next();
      if (r.done) return;
      const batch = r.value;
      this.consumed = batch.revision;
      this.table.changed(changesOfEvents(batch.events), this.t);
      for (const e of batch.events) {
        const p = parseKey(e.kv.key);
        if (e.type === 'delete' && p?.kind === 'decision') this.evicted.add(e.kv.key);
        if (p?.kind === 'assigned') {
          if (e.type === 'delete') this.mirror.assigned.delete(e.kv.key);
          else {
            const a = decodeFact('assigned', e.kv.key, e.kv.value);
            this.mirror.assigned.set(e.kv.key, { node: a.node, ...a.resources });
          }
        }
        if (p?.kind === 'node' && e.type === 'put') this.mirror.capacity.set(p.params.node!, decodeFact('node', e.kv.key, e.kv.value).capacity);
        if (e.type === 'put' && e.kv.version === 1 && p?.kind === 'replica') {
          const rec = decodeFact('replica', e.kv.key, e.kv.value);
          if (rec.replaces?.ended.outcome === 'lost') this.replaces.set(rec.id, rec.replaces.replica);
        }
        if (e.type === 'put' && p?.kind === 'lost') {
          const l = decodeFact('lost', e.kv.key, e.kv.value);
          this.lostProofs.set(l.replica, (this.lostProofs.get(l.replica) ?? new Set()).add(l.proof));
        }
      }
      for (const d of await inv.checkNewAssignments(this.store, batch)) this.violate(inv.INVARIANTS.placedOnReady, d);
      for (const d of inv.checkStatefulPlacements(batch, this.replaces, this.lostProofs, this.agents.values())) this.violate(inv.INVARIANTS.statefulProven, d);
    }
  }

  /**
   * Liveness at the end of a run, once every fault has healed and the world settled: lost
   * replicas replaced, desired replicas running where capacity allows, every decision
   * chain complete (or truncated by a real eviction), and one more round of every step
   * and agent writes nothing.
   */
  async checkQuiescent(): Promise<void> {
    if (this.violations.length > 0) return;
    await this.drain();
    const run = async (name: string, f: () => Promise<string[]>) => {
      for (const d of await f()) this.violate(name, d);
    };
    await run(inv.INVARIANTS.lostReplaced, () => inv.checkLostReplaced(this.store));
    await run(inv.INVARIANTS.eventuallyRunning, () => inv.checkEventuallyRunning(this.store, this.agents));
    await run(inv.INVARIANTS.chains, () => inv.checkChains(this.store, this.evicted));
    await run(inv.INVARIANTS.convergedWritesNothing, () => this.extraRoundWrites());
  }

  private async extraRoundWrites(): Promise<string[]> {
    const retention = this.controllers.find((c) => c.name === 'retention');
    if (retention) await retention.reconcile({ store: this.store, now: this.t, random: () => this.ctrlRng.next() });
    await this.drain();
    const before = await this.store.revision();
    for (const c of this.controllers) {
      if (c === retention) continue;
      const subjects = c.subjectOf ? ((await c.subjects?.(this.store)) ?? []) : [undefined];
      for (const s of subjects) await c.reconcile({ store: this.store, now: this.t, random: () => this.ctrlRng.next(), ...(s !== undefined ? { subject: s } : {}) });
    }
    for (const [name, a] of this.agents) await a.tick(this.t + (this.skews.get(name) ?? 0), this.t);
    const after = await this.store.revision();
    if (after === before) return [];
    const keys: string[] = [];
    let changes = 0;
    for (let rev = before + 1; rev <= after; rev++) {
      const r = await this.watch.next();
      if (r.done) break;
      // The agent re-sends an autoscaled replica's observation with fresh usage every
      // reportEveryMs by design (agent/core/reporting.ts): the same fact at a later time is no change.
      const real = [];
      for (const e of r.value.events) if (!(await this.isRefresh(e, rev))) real.push(e);
      if (real.length > 0) changes++;
      keys.push(...real.map((e) => `${e.type} ${e.kv.key}`));
    }
    this.consumed = after;
    if (changes === 0) return [];
    return [`a converged system wrote ${changes} revision(s): ${keys.slice(0, 10).join(', ')}`];
  }

  /** A put of an observation equal to the one before it but for its time. */
  private async isRefresh(e: WatchBatch['events'][number], revision: number): Promise<boolean> {
    if (e.type !== 'put' || parseKey(e.kv.key)?.kind !== 'observed') return false;
    const prev = await this.store.get(e.kv.key, { revision: revision - 1 }).catch(() => undefined);
    if (!prev) return false;
    const { at: _a, ...was } = decodeFact('observed', prev.key, prev.value);
    const { at: _b, ...now } = decodeFact('observed', e.kv.key, e.kv.value);
    return JSON.stringify(was) === JSON.stringify(now);
  }
}
