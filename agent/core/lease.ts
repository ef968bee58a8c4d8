import type { NodeCondition, NodeRecordInput } from '../../core/model/index.js';
import { Enrollment } from './enrollment.js';
import { ServerError } from './errors.js';
import { FENCE, FenceClock } from './fence.js';
import type { AgentClock, AgentDisk, ControlPlane, LeaseState } from './ports.js';
import type { Runtime } from './runtime.js';

export const AGENT_VERSION = '0.1.0';

export { ENROLL_BACKOFF } from './enrollment.js';

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
  /** The supervisors' deadline was moved past the fence point (a confirmed outage, docs/fencing.md): to this (mono). */
  private runUntil: number | undefined;
  /** The keepalive on its way, if any: it may be renewing the lease right now (a peer answering waits for it, docs/fencing.md). */
  keepaliveInFlight: Promise<unknown> | undefined;
  private readonly enrollment: Enrollment;
  /** What the node record says is wrong with the node (a full disk), and whether the server has the latest. */
  private conditions: NodeCondition[] = [];
  private conditionsSent = true;
  /** A store-down answer was logged since the last renewal (logged once per streak). */
  private storeDownSaid = false;

  constructor(private readonly d: LeaseKeeperDeps) {
    this.fence = new FenceClock(d.ttl);
    this.enrollment = new Enrollment({ node: d.node, control: d.control, clock: d.clock, log: d.log, event: d.event, stableMs: d.ttl * 1000 });
  }

  /**
   * Resume from the disk; false when there is no lease to resume (fenced until registered).
   * A previous run that left the supervisors' deadline past the lease's fence point did so
   * only while peers confirmed an outage: `resumed` gets that chain (from, until; mono), so
   * a restart during the outage does not fence everything at once.
   */
  restore(resumed?: (from: number, until: number) => void): boolean {
    this.lease = this.d.disk.lease() ?? undefined;
    const fenceAt = this.d.disk.fenceAt();
    if (this.lease && fenceAt !== undefined) {
      this.fence.renewed(this.toMono(fenceAt) + FENCE.marginMs - this.lease.ttl * 1000, this.lease.ttl);
      const at = this.fence.fenceAt();
      const deadline = this.d.disk.supervisorDeadline();
      if (at !== undefined && deadline !== undefined && this.toMono(deadline) > at) {
        this.runUntil = this.toMono(deadline);
        resumed?.(at, this.runUntil);
        this.d.log(`resuming an outage the previous run's peers confirmed: workloads may run ${Math.round(this.runUntil - at)} ms past the fence point`);
      }
      return true;
    }
    this.fence.lost();
    return false;
  }

  /**
   * The supervisors' deadline follows a confirmed outage (`until`, mono; undefined: none) past
   * the fence point, and returns to the fence point when the confirmations stop, so a frozen
   * or killed agent's workloads still stop once its peers stop confirming (docs/fencing.md).
   * Written only when it changes.
   */
  followOutage(until: number | undefined): void {
    const at = this.fence.fenceAt();
    if (at === undefined || !Number.isFinite(at)) return;
    if (until !== undefined && until > at) {
      if (until === this.runUntil) return;
      this.runUntil = until;
      this.d.disk.saveRunUntil(until + this.wallOffset());
    } else if (this.runUntil !== undefined) {
      this.runUntil = undefined;
      this.d.disk.saveRunUntil(at + this.wallOffset());
    }
  }

  /** Register or keep alive, once; returns how long to wait before the next step. Throws call errors. */
  async step(): Promise<number> {
    const interval = (this.d.ttl * 1000) / FENCE.keepalivesPerTtl;
    // No credential (never enrolled, or the server refused it: a reset, a store restored):
    // enroll before anything else, or wait and try again. A new credential registers again,
    // resuming the lease: the same tenure while it lives, a new one if the store lost it.
    if (!this.d.control.enrolled) {
      const wait = await this.enrollment.ensure();
      if (wait > 0) return wait;
      this.registered = false;
    }
    if (!this.registered || !this.conditionsSent) {
      await this.register();
      return interval;
    }
    return this.keepalive(interval);
  }

  /**
   * The node's conditions changed (agent/core/disk.ts): the next step registers again with
   * them, resuming the lease (same tenure), so the node record carries them to the scheduler.
   */
  setConditions(conditions: NodeCondition[]): void {
    this.conditions = conditions;
    this.conditionsSent = false;
    this.d.changed();
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

  /** A call answered 401 (agent/core/enrollment.ts): drop the credential and enroll again, unless it was made with one already replaced. */
  credentialRefused(e: ServerError, call: string): void {
    this.enrollment.refused(e, call);
  }

  private async register(): Promise<void> {
    const images = (await this.d.runtime.catalogue()) ?? {};
    const conditions = this.conditions;
    const record: NodeRecordInput = { ...this.d.record, name: this.d.node, images, pulls: this.d.runtime.pulls ?? false, runtime: this.d.runtime.name, agentVersion: AGENT_VERSION, conditions };
    const sentAt = this.d.clock.mono();
    const previous = this.lease;
    const update = this.registered;
    let r: Awaited<ReturnType<ControlPlane['register']>>;
    try {
      r = await this.d.control.register(record, this.d.ttl, previous?.lease);
    } catch (e) {
      // A registration resuming a lease (a restarted agent's first call) told "store down" is
      // evidence like a keepalive's: the lease's clock stands still, so the fence point moves
      // by the span seen down. Without a lease the fence is already down (FenceClock ignores it).
      if (e instanceof ServerError && e.storeUnavailable) this.storeDown(sentAt, e, 'registration');
      throw e;
    }
    // Sent, unless they changed again while the call was out.
    if (conditions === this.conditions) this.conditionsSent = true;
    this.lease = { lease: r.lease, tenure: r.tenure, ttl: r.ttl };
    this.d.disk.saveLease(this.lease);
    this.registered = true;
    this.enrollment.held();
    this.storeDownSaid = false;
    this.fence.renewed(sentAt, r.ttl);
    this.saveFence();
    const kept = previous?.tenure === r.tenure;
    const said = conditions.length > 0 ? conditions.map((c) => c.code).join(', ') : 'none';
    if (update && kept) {
      // Only the node record changed (its conditions): not a new registration.
      this.d.log(`node record updated: conditions ${said}`);
    } else {
      this.d.log(`registered: lease ${r.lease}, tenure ${r.tenure}${kept ? ' (kept)' : ''}${conditions.length > 0 ? `, conditions ${said}` : ''}`);
      this.d.event('registered', `registered with tenure ${r.tenure}${kept ? ' (same tenure as before)' : ''}`);
    }
    this.d.changed();
  }

  private async keepalive(interval: number): Promise<number> {
    const lease = this.lease;
    if (!lease) return interval;
    const sentAt = this.d.clock.mono();
    const wasDue = this.fence.due(sentAt);
    const call = this.d.control.keepalive(lease.lease);
    this.keepaliveInFlight = call;
    try {
      const r = await call;
      this.enrollment.held();
      this.storeDownSaid = false;
      this.fence.renewed(sentAt, r.ttl);
      this.saveFence();
      if (wasDue) this.d.changed();
      return interval;
    } catch (e) {
      if (e instanceof ServerError && e.storeUnavailable) {
        this.storeDown(sentAt, e, 'keepalive');
        return FENCE.keepaliveRetryMs;
      }
      if (e instanceof ServerError && (e.status === 404 || e.diagnostic.code === 'CCA-E0107')) {
        this.lost('the lease expired');
        return 0;
      }
      throw e;
    } finally {
      this.keepaliveInFlight = undefined;
    }
  }

  /**
   * The server answered a call sent at `sentAt` with "store down". The store's lease clock
   * stands still while it is down: the deadline moves by the span seen down (fence.ts). No
   * renewal: a confirmed outage's later deadline stays with the supervisors.
   */
  private storeDown(sentAt: number, e: ServerError, call: 'keepalive' | 'registration'): void {
    this.fence.storeDown(sentAt);
    this.saveFence({ keepOutage: true });
    if (!this.storeDownSaid) this.d.log(`${call}: ${e.diagnostic.code} ${e.diagnostic.message} (the server's store is down: the fence point moves by the span it says so)`);
    this.storeDownSaid = true;
  }

  /** The monotonic instant of a wall-clock time (the disk keeps wall time: supervisors are other processes). */
  private toMono(wall: number): number {
    return wall - this.wallOffset();
  }

  private wallOffset(): number {
    return this.d.clock.wall() - this.d.clock.mono();
  }

  /**
   * Both the lease's fence point and the supervisors' deadline, in one call. A renewal (or the
   * lease lost) ends any extension: the supervisors' deadline is the fence point. A store-down
   * answer renews nothing (`keepOutage`): a confirmed outage running past the moved fence point
   * keeps its deadline. Writing the fence point there (as before) stopped every workload of an
   * agent whose control plane returned with its store down: the supervisors read a deadline
   * long past before the next tick moved it back (docs/fencing.md).
   */
  private saveFence(opts: { keepOutage?: boolean } = {}): void {
    const at = this.fence.fenceAt();
    if (at === undefined) return;
    if (!opts.keepOutage || !Number.isFinite(at) || (this.runUntil !== undefined && this.runUntil <= at)) this.runUntil = undefined;
    const wall = Number.isFinite(at) ? at + this.wallOffset() : 0;
    this.d.disk.saveFenceAt(wall, this.runUntil === undefined ? wall : this.runUntil + this.wallOffset());
  }
}
