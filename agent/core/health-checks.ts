import { makeDiagnostic, messageOf } from '../../core/diagnostics/index.js';
import { CheckState, probeText } from './health.js';
import type { Prober } from './ports.js';
import type { Runtime, WorkloadHandle } from './runtime.js';
import type { Slot } from './slot.js';

export interface HealthChecksDeps {
  runtime: Pick<Runtime, 'stop'>;
  prober: Prober;
  log: (line: string) => void;
  event: (kind: string, message: string, replica?: string) => void;
  /** Ask for a reconcile. */
  kick: () => void;
  /** Work the core's idle() waits for. */
  track: (p: Promise<unknown>) => void;
}

/** Supervision of running workloads by their health checks (the probes' I/O is the Prober's). */
export class HealthChecks {
  constructor(private readonly d: HealthChecksDeps) {}

  /** Probe what is due on running workloads; a liveness check failing past its threshold stops the workload. */
  run(slots: Iterable<Slot>, now: number): void {
    for (const slot of slots) {
      const a = slot.assignment;
      if (slot.state !== 'running' || !slot.handle || !a) continue;
      for (const kind of ['liveness', 'readiness'] as const) {
        const check = a.spec.health[kind];
        if (!check) continue;
        const cs = (slot[kind] ??= new CheckState(check, now));
        if (!cs.due(now)) continue;
        const handle = slot.handle;
        const address = slot.address;
        this.d.track(
          cs.run(now, () => this.d.prober.probe(check, a.spec, handle, address)).then((changed) => {
            if (changed) this.d.event(kind, `${kind} ${cs.state}`, slot.replica);
            // Not only on the change: a stop that failed leaves it running, and the next failing probe tries again.
            if (kind === 'liveness' && cs.state === 'failing') return this.livenessFailed(slot, handle, cs);
          }),
        );
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
    this.d.log(`${slot.replica}: ${d.code} ${d.message}`);
    this.d.event('liveness-failed', `${d.code} ${d.message}`, slot.replica);
    try {
      await this.d.runtime.stop(handle, a.spec.stopGraceMs);
    } catch (e) {
      this.d.log(`stopping ${slot.replica} after its liveness failure failed: ${messageOf(e)}`);
    }
    this.d.kick();
  }
}
