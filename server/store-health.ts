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
): { stop(): void } {
  let failing = false;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      await store.revision();
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
