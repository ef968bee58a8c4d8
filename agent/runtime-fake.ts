import { Listeners, type Runtime, type RuntimeEvent, type StartRequest, type WorkloadHandle, type WorkloadStatus } from './runtime.js';

interface FakeWorkload {
  handle: WorkloadHandle;
  /** Port name → container port, from the spec. */
  ports: Record<string, number>;
  address?: string;
  state: WorkloadStatus['state'];
  exitCode?: number;
  stopTimer?: ReturnType<typeof setTimeout>;
}

export interface FakeRuntimeOptions {
  catalogue?: Record<string, string>;
  /** How long a stopped fake workload takes to exit after SIGTERM (never longer than the grace). */
  exitAfterTermMs?: number;
  now?: () => number;
  /**
   * Workloads get their own (pretend) network namespace: each reports a deterministic
   * address of its own, 127.1.0.<n> for its nth start. Off: host networking (no address,
   * the agent reports the node's).
   */
  ownNetwork?: boolean;
}

/**
 * In-memory runtime for tests and the simulation. Workloads "run" until stopped or killed by
 * the test (`crash`). One instance outlives an Agent object, which is how tests model an
 * agent restart re-adopting what the runtime still holds.
 */
export class FakeRuntime implements Runtime {
  readonly name = 'fake' as const;
  private readonly workloads = new Map<string, FakeWorkload>();
  private readonly listeners = new Listeners();
  private seq = 0;
  private readonly now: () => number;
  /** Every start ever made, for tests that check nothing started twice. */
  readonly starts: string[] = [];
  /** Exit codes exec probes get, per replica (0 when unset): a test hook for failing health checks. */
  readonly execResults = new Map<string, number>();

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
    this.workloads.set(req.replica, { handle, state: 'running', ports, ...(this.opts.ownNetwork ? { address: `127.1.${Math.floor(seq / 250)}.${(seq % 250) + 1}` } : {}) });
    this.starts.push(req.replica);
    return handle;
  }

  async stop(handle: WorkloadHandle, graceMs: number): Promise<void> {
    const w = this.workloads.get(handle.replica);
    if (!w || w.state !== 'running') return;
    w.state = 'stopping';
    w.stopTimer = setTimeout(() => this.exit(handle.replica, 143), Math.min(graceMs, this.opts.exitAfterTermMs ?? 0));
  }

  async remove(handle: WorkloadHandle): Promise<void> {
    const w = this.workloads.get(handle.replica);
    if (w?.stopTimer) clearTimeout(w.stopTimer);
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
    for (const w of this.workloads.values()) if (w.stopTimer) clearTimeout(w.stopTimer);
  }

  /** Test hook: the workload dies on its own with this exit code. */
  crash(replica: string, exitCode = 137): void {
    this.exit(replica, exitCode);
  }

  /** Replicas currently running (not exited), for assertions. */
  running(): string[] {
    return [...this.workloads.values()].filter((w) => w.state === 'running' || w.state === 'stopping').map((w) => w.handle.replica).sort();
  }

  private exit(replica: string, exitCode: number): void {
    const w = this.workloads.get(replica);
    if (!w || w.state === 'exited') return;
    w.state = 'exited';
    w.exitCode = exitCode;
    this.listeners.emit({ kind: 'exited', replica, exitCode, oom: false, at: this.now() });
  }

  private status(w: FakeWorkload): WorkloadStatus {
    return {
      handle: w.handle,
      state: w.state,
      ...(w.exitCode === undefined ? {} : { exitCode: w.exitCode }),
      ...(w.state === 'running' ? { usage: { cpuMillis: 1, memoryBytes: 1 << 20 } } : {}),
      ...(w.address !== undefined ? { address: w.address, ports: w.ports } : {}),
    };
  }
}
