import { toDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import type { Store } from '../db/store.js';

/**
 * A pod's view of its store, whatever the backend: asks for the revision every second and
 * reports a failing store once per outage (and its return once), never once per request
 * or step.
 */
export function watchStoreHealth(
  store: Store,
  outage: Pick<OutageGate, 'report' | 'asking' | 'answered'>,
  recovered: () => void,
  everyMs = 1_000,
): { stop(): void } {
  let failing = false;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const asked = outage.asking();
      await store.revision();
      outage.answered(asked);
      if (failing) recovered();
      failing = false;
    } catch (e) {
      if (!failing) outage.report(toDiagnostic(e, 'the store'));
      failing = true;
    } finally {
      busy = false;
    }
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * The diagnostics that say "the store is failing", whoever meets it (the health probe, a
 * driver, graphile-worker releasing a job: CCA-E0424).
 */
export const STORE_FAILING: ReadonlySet<string> = new Set(['CCA-E0111', 'CCA-E0112', 'CCA-E0403', 'CCA-E0424']);

/** The pod's one voice for "the store is failing" (oneReportPerOutage). */
export interface OutageGate {
  /** A diagnostic from any part of the pod: a store failure passes only while the gate is open. */
  report(d: Diagnostic): void;
  /** Taken before the health probe asks the store; handed back to `answered` with the answer. */
  asking(): number;
  /** The store answered a question asked at `asked`: the gate opens unless it closed since. */
  answered(asked: number): void;
}

/**
 * One report per outage for the whole pod: the health probe and the controller drivers each
 * report a failing store once, and this gate lets only the first of them through until the
 * store answers the health probe again. Only a question asked after the gate closed can open
 * it: while Postgres shuts down it refuses new connections but still answers on the open ones
 * for a moment, so a probe asked before a driver's refusal can answer after it — that answer
 * says nothing about the outage and must not let the probe's own failure a second later be
 * reported again. Other diagnostics pass unchanged.
 */
export function oneReportPerOutage(sink: (d: Diagnostic) => void): OutageGate {
  let open = true;
  let closings = 0;
  return {
    report(d) {
      if (!STORE_FAILING.has(d.code)) return sink(d);
      if (!open) return;
      open = false;
      closings += 1;
      sink(d);
    },
    asking: () => closings,
    answered(asked) {
      if (asked === closings) open = true;
    },
  };
}
