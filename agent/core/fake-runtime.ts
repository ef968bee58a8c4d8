import { Listeners, type Runtime, type RuntimeEvent, type StartRequest, type WorkloadHandle, type WorkloadStatus } from './runtime.js';

/** One fake workload: what the runtime holds, and the faults a test or the simulation put on it. */
export interface FakeWorkload {
  handle: WorkloadHandle;
  replica: string;
  service: string;
  /** Port name → container port, from the spec. */
  ports: Record<string, number>;
  address?: string;
  state: WorkloadStatus['state'];
  exitCode?: number;
  startedAt: number;
  endedAt?: number;
  /** Its readiness probe fails (a fault); it keeps running. */
  unready?: boolean;
  /** Its liveness probe fails (a fault): the agent stops it and reports it failed. */
  unalive?: boolean;
}

export interface FakeRuntimeOptions {
  catalogue?: Record<string, string>;
  /** How long a stopped fake workload takes to exit after SIGTERM (never longer than the grace). */
  exitAfterTermMs?: number;
  now?: () => number;
  /**
   * Workloads get their own (pretend) network namespace: each reports a deterministic
   * address of its own, 127.1.0.<n> for its nth start (or `<subnet>.<n+1>` with `subnet`).
   * Off: host networking (no address, the agent reports the node's).
   */
  ownNetwork?: boolean;
  /** The replica network's prefix ("10.88.1") when `ownNetwork`. */
  subnet?: string;
  /**
   * Timers run on the caller's clock: a stop's exit waits for `advance()` (the simulation)
   * instead of a real timer.
   */
  manualTime?: boolean;
}

/**
 * The in-memory runtime of unit tests, `cca agent --runtime fake` and the simulation.
 * Workloads "run" until stopped or killed by the test (`crash`). One instance outlives an
 * agent, which is how tests model an agent restart re-adopting what the runtime holds.
 *
 * It plays a node's supervisors too (`supervise`): workloads outlive their agent process,
 * and the supervisor kills them at the fence deadline the agent last wrote, so a dead
 * agent's workloads are fenced as surely as a partitioned one's. Browser-safe.
 */
export class FakeRuntime implements Runtime {
  readonly name = 'fake' as const;
  readonly workloads = new Map<string, FakeWorkload>();
  private readonly listeners = new Listeners();
  private seq = 0;
  private readonly now: () => number;
  private readonly timers = new Map<string, { at: number; fire: () => void; cancel: () => void }>();
  /** Every start ever made, for tests that check nothing started twice. */
  readonly starts: string[] = [];
  /** Exit codes exec probes get, per replica (0 when unset): a test hook for failing health checks. */
  readonly execResults = new Map<string, number>();
  /** The next this-many stops fail (a stuck process); the agent tries again. */
  failingStops = 0;
  /** CPU millicores a running workload reports now, or undefined (no sample yet); the simulation sets it. */
  cpuUsage: (w: FakeWorkload) => number | undefined = () => 1;
  /** Wall-clock time after which the supervisors kill every workload (the agent's `fence-at`); see supervise. */
  fenceAt: number | undefined;

  constructor(private readonly opts: FakeRuntimeOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  async catalogue(): Promise<Record<string, string> | undefined> {
    return this.opts.catalogue === undefined ? undefined : { ...this.opts.catalogue };
  }

  async start(req: StartRequest): Promise<WorkloadHandle> {
    const seq = ++this.seq;
    const handle: WorkloadHandle = { runtime: 'fake', replica: req.replica, service: req.service, id: `fake-${seq}`, image: req.image, startedAt: this.now() };
    const ports = Object.fromEntries(req.spec.ports.map((p) => [p.name, p.container]));
    const address = !this.opts.ownNetwork ? undefined : this.opts.subnet !== undefined ? `${this.opts.subnet}.${seq + 1}` : `127.1.${Math.floor(seq / 250)}.${(seq % 250) + 1}`;
    this.cancel(req.replica);
    this.workloads.set(req.replica, { handle, replica: req.replica, service: req.service, state: 'running', ports, startedAt: handle.startedAt, ...(address === undefined ? {} : { address }) });
    this.starts.push(req.replica);
    return handle;
  }

  async stop(handle: WorkloadHandle, graceMs: number): Promise<void> {
    const w = this.workloads.get(handle.replica);
    if (!w || w.state !== 'running') return;
    if (this.failingStops > 0) {
      this.failingStops--;
      throw new Error(`the fake runtime could not stop ${handle.replica} (an injected fault)`);
    }
    w.state = 'stopping';
    this.after(handle.replica, Math.min(graceMs, this.opts.exitAfterTermMs ?? 0), () => this.exit(handle.replica, 143));
  }

  async remove(handle: WorkloadHandle): Promise<void> {
    this.cancel(handle.replica);
    this.workloads.delete(handle.replica);
  }

  async inspect(handle: WorkloadHandle): Promise<WorkloadStatus> {
    const w = this.workloads.get(handle.replica);
    if (!w) return { handle, state: 'lost', lost: { code: 'CCA-E0503', message: 'the fake runtime has no such workload' } };
    return this.status(w);
  }

  async list(): Promise<WorkloadStatus[]> {
    return [...this.workloads.values()].map((w) => this.status(w));
  }

  async exec(handle: WorkloadHandle): Promise<number> {
    return this.execResults.get(handle.replica) ?? 0;
  }

  subscribe(listener: (e: RuntimeEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }

  /** Test hook: the workload dies on its own with this exit code. */
  crash(replica: string, exitCode = 137): void {
    this.exit(replica, exitCode);
  }

  /** Replicas currently running (not exited), for assertions. */
  running(): string[] {
    return this.alive().map((w) => w.replica).sort();
  }

  /** Workloads whose processes are alive (running, or stopping and not yet exited). */
  alive(): FakeWorkload[] {
    return [...this.workloads.values()].filter((w) => w.state === 'running' || w.state === 'stopping');
  }

  /** With `manualTime`: fire the exits due by now. */
  advance(): void {
    const now = this.now();
    for (const [replica, t] of [...this.timers]) {
      if (t.at > now) continue;
      this.timers.delete(replica);
      t.fire();
    }
  }

  /** The supervisors' check at wall time `now`: past the fence deadline every live workload is killed. Returns the replicas killed. */
  supervise(now = this.now()): string[] {
    if (this.fenceAt === undefined || now < this.fenceAt) return [];
    const killed = this.alive().map((w) => w.replica);
    for (const r of killed) this.exit(r, 137);
    return killed;
  }

  /** Power loss: every workload dies with the machine, and nothing remains of them. */
  powerOff(): void {
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
    this.workloads.clear();
  }

  private after(replica: string, ms: number, fire: () => void): void {
    this.cancel(replica);
    if (this.opts.manualTime) {
      this.timers.set(replica, { at: this.now() + ms, fire, cancel: () => undefined });
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(replica);
      fire();
    }, ms);
    this.timers.set(replica, { at: this.now() + ms, fire, cancel: () => clearTimeout(t) });
  }

  private cancel(replica: string): void {
    this.timers.get(replica)?.cancel();
    this.timers.delete(replica);
  }

  private exit(replica: string, exitCode: number): void {
    const w = this.workloads.get(replica);
    if (!w || w.state === 'exited') return;
    this.cancel(replica);
    w.state = 'exited';
    w.exitCode = exitCode;
    w.endedAt = this.now();
    this.listeners.emit({ kind: 'exited', replica, exitCode, oom: false, at: w.endedAt });
  }

  private status(w: FakeWorkload): WorkloadStatus {
    const usage = w.state === 'running' ? this.cpuUsage(w) : undefined;
    return {
      handle: w.handle,
      state: w.state,
      ...(w.exitCode === undefined ? {} : { exitCode: w.exitCode }),
      ...(usage === undefined ? {} : { usage: { cpuMillis: usage, memoryBytes: 1 << 20 } }),
      ...(w.address !== undefined ? { address: w.address, ports: w.ports } : {}),
    };
  }
}
