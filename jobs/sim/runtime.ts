/**
 * The fake runtime of one simulated machine: workloads that run until killed or crashed.
 * It plays the supervisor too: workloads outlive their agent process, and the supervisor
 * stops them at the fencing deadline the agent last set (rule 7), so a dead agent's
 * workloads are fenced as surely as a partitioned one's.
 */
export interface Workload {
  replica: string;
  service: string;
  tenure: number;
  state: 'running' | 'exited';
  exitCode?: number;
  startedAt: number;
  endedAt?: number;
  /** Its own address (a node with a replica network); never reused within a run. */
  address?: string;
  /** Its readiness probe fails (a fault the scenario injects); it keeps running. */
  unready?: boolean;
  /** Its liveness probe fails: the agent stops it and reports it failed (see SimAgent). */
  unalive?: boolean;
  /** Stopped by the agent for failing liveness: reported failed with this reason. */
  livenessFailed?: string;
}

export class FakeRuntime {
  readonly workloads = new Map<string, Workload>();
  /** Monotonic time after which the supervisor stops everything (set by the agent, see SimAgent). */
  fenceDeadline = Infinity;
  /** The next this-many kills fail (a stuck process); each is retried. */
  failingKills = 0;
  /** CPU millicores a running workload reports now, or undefined (no sample yet, no load); the world sets it. */
  cpuUsage: (w: Workload) => number | undefined = () => undefined;
  /** A node's replica network ("10.88.1"): each workload gets an address of its own. Unset: host networking. */
  subnet: string | undefined;
  private nextHost = 2;

  start(replica: string, service: string, tenure: number, at: number): void {
    const address = this.subnet === undefined ? undefined : `${this.subnet}.${this.nextHost++}`;
    this.workloads.set(replica, { replica, service, tenure, state: 'running', startedAt: at, ...(address === undefined ? {} : { address }) });
  }

  /** False when the kill failed; the workload keeps running. */
  kill(replica: string, at: number): boolean {
    const w = this.workloads.get(replica);
    if (!w || w.state !== 'running') return true;
    if (this.failingKills > 0) {
      this.failingKills--;
      return false;
    }
    w.state = 'exited';
    w.exitCode = 143;
    w.endedAt = at;
    return true;
  }

  crash(replica: string, code: number, at: number): void {
    const w = this.workloads.get(replica);
    if (w && w.state === 'running') Object.assign(w, { state: 'exited', exitCode: code, endedAt: at });
  }

  running(): Workload[] {
    return [...this.workloads.values()].filter((w) => w.state === 'running');
  }

  /** The supervisor's check, on the machine's monotonic clock (`at` only stamps the exits). */
  supervise(mono: number, at = mono): string[] {
    if (mono < this.fenceDeadline) return [];
    return this.running().filter((w) => this.kill(w.replica, at)).map((w) => w.replica);
  }

  /** Power loss: every workload dies with the machine. */
  powerOff(at: number): void {
    for (const w of this.running()) Object.assign(w, { state: 'exited', exitCode: 137, endedAt: at });
    this.workloads.clear();
  }
}
