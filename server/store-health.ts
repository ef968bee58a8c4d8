import { toDiagnostic, type Diagnostic } from '../core/diagnostics/index.js';
import type { Store } from '../db/store.js';

/**
 * A pod's view of its store, whatever the backend: asks for the revision every second and
 * reports a failing store once per outage (and its return once), never once per request
 * or step.
 */
export function watchStoreHealth(
  store: Store,
  report: (d: Diagnostic) => void,
  recovered: () => void,
  everyMs = 1_000,
  answered: () => void = () => undefined,
): { stop(): void } {
  let failing = false;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      await store.revision();
      answered();
      if (failing) recovered();
      failing = false;
    } catch (e) {
      if (!failing) report(toDiagnostic(e, 'the store'));
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

/**
 * One report per outage for the whole pod: the health probe and the controller drivers each
 * report a failing store once, and this gate lets only the first of them through until the
 * store answers the health probe again (`answered`). Other diagnostics pass unchanged.
 */
export function oneReportPerOutage(sink: (d: Diagnostic) => void): { report(d: Diagnostic): void; answered(): void } {
  let open = true;
  return {
    report(d) {
      if (!STORE_FAILING.has(d.code)) return sink(d);
      if (!open) return;
      open = false;
      sink(d);
    },
    answered() {
      open = true;
    },
  };
}
