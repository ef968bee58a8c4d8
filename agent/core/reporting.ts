import { makeDiagnostic } from '../../core/diagnostics/index.js';
import type { Assignment, NodeEvent, Observation } from '../../core/model/index.js';
import { ServerError } from './errors.js';
import type { ControlPlane } from './ports.js';
import { fingerprint, observationOf, TERMINAL, type Slot } from './slot.js';

export interface ReporterDeps {
  node: string;
  /** The node's declared address (host networking). */
  nodeAddress: string;
  control: ControlPlane;
  /** Observations of autoscaled replicas are re-sent (with fresh usage) at least this often. */
  reportEveryMs: number;
  /** Other replicas' unchanged observations are re-sent this often (never below reportEveryMs). */
  usageEveryMs: number;
}

/**
 * What the agent reports and when: observations of its replicas under its tenure when they
 * change (or their refresh is due), everything again after any failed call, the stop
 * confirmations of past tenures' stateful replicas, and its node events.
 */
export class Reporter {
  private readonly events: NodeEvent[] = [];
  private reporting = false;
  /** Failed calls so far, and how many of them the last full re-send came after. */
  private failures = 0;
  private resentAfter = 0;
  /** Stops of past tenures' stateful replicas confirmed to the server (replica → tenure reported under). */
  private readonly confirmed = new Map<string, number>();
  /** The server asked us to wait (429 with Retry-After) until this time (the caller's monotonic clock). */
  private holdUntil = 0;

  constructor(private readonly d: ReporterDeps) {}

  event(e: NodeEvent): void {
    this.events.push(e);
    if (this.events.length > 1000) this.events.splice(0, this.events.length - 1000);
  }

  /**
   * A call failed: once the server answers again everything is re-sent, since what it holds
   * may be older than what we last sent (a store restored, a write lost in the outage).
   */
  callFailed(): void {
    this.failures++;
  }

  /** One report, if anything is due; throws the call's error (the caller's usual handling). */
  async report(slots: Iterable<Slot>, desired: readonly Assignment[], tenure: number, now: number, wall: number): Promise<void> {
    // Told to slow down: nothing is lost by waiting, observations are level state and the
    // newest is sent then (the refused call counts as failed, so everything is re-sent).
    if (this.reporting || now < this.holdUntil) return;
    const slow = Math.max(this.d.reportEveryMs, this.d.usageEveryMs);
    const failures = this.failures;
    const all = failures !== this.resentAfter;
    const due: { slot: Slot; obs: Observation; fp: string }[] = [];
    // Only replicas still assigned here: the server refuses a report on any other
    // (CCA-E0634), and with it the whole batch.
    const assigned = new Set(desired.map((a) => a.replica));
    for (const slot of slots) {
      if (slot.assignment?.tenure !== tenure || slot.settling || !assigned.has(slot.replica)) continue;
      const obs = observationOf(slot, this.d.node, tenure, wall, this.d.nodeAddress);
      if (!obs) continue;
      const fp = fingerprint(obs);
      const refresh = slot.assignment.spec.autoscale ? this.d.reportEveryMs : slow;
      // A refresh is for the usage figures: an unchanged observation without any is not re-sent.
      if (all || fp !== slot.reported || (obs.usage !== undefined && now - slot.reportedAt >= refresh)) due.push({ slot, obs, fp });
    }
    const confirmations = this.stopConfirmations(new Map([...slots].map((s) => [s.replica, s])), desired, tenure, wall);
    const events = this.events.slice(0, 100);
    if (due.length === 0 && events.length === 0 && confirmations.length === 0) return;
    this.reporting = true;
    try {
      if (due.length > 0) {
        await this.d.control.observations(tenure, due.map((d) => d.obs));
        for (const d of due) {
          d.slot.reported = d.fp;
          d.slot.reportedAt = now;
        }
      }
      // A call that failed while this report ran asks for another full re-send.
      if (all) this.resentAfter = failures;
      if (confirmations.length > 0) {
        await this.d.control.observations(tenure, confirmations);
        for (const c of confirmations) this.confirmed.set(c.replica, tenure);
      }
      if (events.length > 0) {
        await this.d.control.events(tenure, events);
        this.events.splice(0, events.length);
      }
    } catch (e) {
      const wait = e instanceof ServerError ? e.retryAfterMs : undefined;
      if (wait !== undefined) this.holdUntil = now + wait;
      throw e;
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
  private stopConfirmations(slots: ReadonlyMap<string, Slot>, desired: readonly Assignment[], tenure: number, wall: number): Observation[] {
    const out: Observation[] = [];
    const assigned = new Set(desired.map((a) => a.replica));
    for (const r of this.confirmed.keys()) if (!assigned.has(r)) this.confirmed.delete(r);
    for (const a of desired) {
      if (a.tenure >= tenure || a.desired !== 'run' || a.spec.volumes.length === 0 || this.confirmed.get(a.replica) === tenure) continue;
      const slot = slots.get(a.replica);
      if (slot && !TERMINAL.has(slot.state)) continue;
      const d = makeDiagnostic('CCA-E0522', { replica: a.replica, tenure: a.tenure, node: this.d.node, current: tenure });
      out.push({
        replica: a.replica,
        service: a.service,
        node: this.d.node,
        tenure,
        state: slot?.state ?? 'exited',
        ...(slot?.exitCode === undefined ? {} : { exitCode: slot.exitCode }),
        restarts: 0,
        health: { liveness: 'unknown', readiness: 'unknown' },
        image: '',
        diagnostic: { code: d.code, message: d.message },
        at: wall,
      });
    }
    return out;
  }
}
