import type { NodeRecordInput } from '../../core/model/index.js';
import { ServerError } from './errors.js';
import { FENCE, FenceClock } from './fence.js';
import type { AgentClock, AgentDisk, ControlPlane, LeaseState } from './ports.js';
import type { Runtime } from './runtime.js';

export const AGENT_VERSION = '0.1.0';

/** Refused enrollments are retried, slower each time: an admin may take a while to reset the node. */
export const ENROLL_BACKOFF = { initialMs: 1_000, maxMs: 60_000 } as const;

export interface LeaseKeeperDeps {
  node: string;
  ttl: number;
  control: ControlPlane;
  disk: AgentDisk;
  runtime: Pick<Runtime, 'catalogue' | 'pulls' | 'name'>;
  record: Omit<NodeRecordInput, 'name' | 'images' | 'runtime' | 'agentVersion'>;
  clock: AgentClock;
  log: (line: string) => void;
  event: (kind: string, message: string) => void;
  /** Something the reconcile depends on changed (tenure, fence). */
  changed: () => void;
}

/**
 * The node's registration: enrollment, registration on a lease (tenure), keepalives, and the
 * fence clock they renew (timed on the monotonic clock). Writes the fence deadline, as wall
 * time, to the disk after every renewal, for the supervisors and the containerd fencer.
 */
export class LeaseKeeper {
  readonly fence: FenceClock;
  lease: LeaseState | undefined;
  registered = false;
  private enrollBackoffMs = 0;
  private lastRefusal = '';

  constructor(private readonly d: LeaseKeeperDeps) {
    this.fence = new FenceClock(d.ttl);
  }

  /** Resume from the disk; false when there is no lease to resume (fenced until registered). */
  restore(): boolean {
    this.lease = this.d.disk.lease() ?? undefined;
    const fenceAt = this.d.disk.fenceAt();
    if (this.lease && fenceAt !== undefined) {
      this.fence.renewed(this.toMono(fenceAt) + FENCE.marginMs - this.lease.ttl * 1000, this.lease.ttl);
      return true;
    }
    this.fence.lost();
    return false;
  }

  /** Register or keep alive, once; returns how long to wait before the next step. Throws call errors. */
  async step(): Promise<number> {
    const interval = (this.d.ttl * 1000) / FENCE.keepalivesPerTtl;
    // No credential (never enrolled, or the server refused it: a reset, a store restored):
    // enroll before anything else, or wait and try again.
    if (!this.d.control.enrolled && !(await this.enroll())) return this.enrollBackoffMs;
    if (!this.registered) {
      await this.register();
      return interval;
    }
    return this.keepalive(interval);
  }

  lost(why: string): void {
    if (!this.registered && !this.lease) return;
    this.d.log(`lease lost (${why}): stopping workloads of tenure ${this.lease?.tenure}, registering again`);
    this.d.event('lease-lost', `${why}; workloads of tenure ${this.lease?.tenure} stopped`);
    this.fence.lost();
    this.saveFence();
    this.registered = false;
    this.lease = undefined;
    this.d.disk.saveLease(undefined);
    this.d.changed();
  }

  /**
   * Enroll with the join token. The server enrolls only a node without a credential: one
   * that has one (CCA-E0630) needs `cca node reset` by an admin first, and a join token that
   * expired, was used up or revoked needs a new one. Either way the agent keeps running what
   * it has (fenced as its lease runs out), logs the coded refusal once, and tries again with
   * backoff. False when not enrolled.
   */
  private async enroll(): Promise<boolean> {
    try {
      await this.d.control.enroll();
      this.d.log('enrolled');
      this.enrollBackoffMs = 0;
      this.lastRefusal = '';
      return true;
    } catch (e) {
      // Unreachable or a store outage: the caller's usual error handling and retry.
      if (!(e instanceof ServerError) || e.status >= 500) throw e;
      this.enrollBackoffMs = Math.min(Math.max(this.enrollBackoffMs * 2, ENROLL_BACKOFF.initialMs), ENROLL_BACKOFF.maxMs);
      const line = `enrollment refused: ${e.diagnostic.code} ${e.diagnostic.message}; fix: ${e.diagnostic.fix}`;
      if (line !== this.lastRefusal) {
        this.d.log(`${line} (retrying with backoff, up to every ${ENROLL_BACKOFF.maxMs / 1000}s)`);
        this.d.event('enroll-refused', `${e.diagnostic.code} ${e.diagnostic.message}`);
      }
      this.lastRefusal = line;
      return false;
    }
  }

  private async register(): Promise<void> {
    const images = (await this.d.runtime.catalogue()) ?? {};
    const record: NodeRecordInput = { ...this.d.record, name: this.d.node, images, pulls: this.d.runtime.pulls ?? false, runtime: this.d.runtime.name, agentVersion: AGENT_VERSION };
    const sentAt = this.d.clock.mono();
    const previous = this.lease;
    const r = await this.d.control.register(record, this.d.ttl, previous?.lease);
    this.lease = { lease: r.lease, tenure: r.tenure, ttl: r.ttl };
    this.d.disk.saveLease(this.lease);
    this.registered = true;
    this.fence.renewed(sentAt, r.ttl);
    this.saveFence();
    const kept = previous?.tenure === r.tenure;
    this.d.log(`registered: lease ${r.lease}, tenure ${r.tenure}${kept ? ' (kept)' : ''}`);
    this.d.event('registered', `registered with tenure ${r.tenure}${kept ? ' (same tenure as before)' : ''}`);
    this.d.changed();
  }

  private async keepalive(interval: number): Promise<number> {
    const lease = this.lease;
    if (!lease) return interval;
    const sentAt = this.d.clock.mono();
    const wasDue = this.fence.due(sentAt);
    try {
      const r = await this.d.control.keepalive(lease.lease);
      this.fence.renewed(sentAt, r.ttl);
      this.saveFence();
      if (wasDue) this.d.changed();
      return interval;
    } catch (e) {
      if (e instanceof ServerError && e.storeUnavailable) {
        // The store's lease clock stands still while it is down: the deadline moves by the span seen down (fence.ts).
        this.fence.storeDown(sentAt);
        this.saveFence();
        return FENCE.keepaliveRetryMs;
      }
      if (e instanceof ServerError && (e.status === 404 || e.diagnostic.code === 'CCA-E0107')) {
        this.lost('the lease expired');
        return 0;
      }
      throw e;
    }
  }

  /** The monotonic instant of a wall-clock time (the disk keeps wall time: supervisors are other processes). */
  private toMono(wall: number): number {
    return wall - (this.d.clock.wall() - this.d.clock.mono());
  }

  private saveFence(): void {
    const at = this.fence.fenceAt();
    if (at !== undefined) this.d.disk.saveFenceAt(Number.isFinite(at) ? at + (this.d.clock.wall() - this.d.clock.mono()) : 0);
  }
}
