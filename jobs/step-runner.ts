import { makeDiagnostic } from '../core/diagnostics/error.js';
import { isCcaError } from '../core/diagnostics/error.js';
import type { Diagnostic } from '../core/diagnostics/types.js';
import type { Store } from '../db/store.js';
import type { Controller, Wakeup } from './controller.js';
import { messageOf } from '../core/diagnostics/index.js';

export type StepOutcome = { ok: true; wake: Wakeup } | { ok: false; storeDown: boolean; diagnostic: Diagnostic };

/** Run one step; turn whatever it throws into a coded diagnostic (store down = environment). */
export async function runStep(c: Controller, store: Store, now: number, random: () => number, subject: string | undefined): Promise<StepOutcome> {
  try {
    const wake = await c.reconcile({ store, now, random, ...(subject !== undefined ? { subject } : {}) });
    return { ok: true, wake };
  } catch (e) {
    if (isCcaError(e) && e.blame === 'environment') {
      return { ok: false, storeDown: true, diagnostic: makeDiagnostic('CCA-E0403', { reason: e.diagnostic.message }) };
    }
    const reason = isCcaError(e) ? `${e.code} ${e.diagnostic.message}` : messageOf(e);
    return { ok: false, storeDown: false, diagnostic: makeDiagnostic('CCA-E0404', { controller: c.name, reason }) };
  }
}

/** Exponential backoff after consecutive failures, capped; `random` spreads retries apart. */
export function backoffMs(failures: number, random: () => number, baseMs = 100, maxMs = 5_000): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 16));
  return Math.round(d * (0.75 + 0.5 * random()));
}

/**
 * Reports a failing store once per outage (not once per step) and any other failure once
 * per distinct message; `recovered()` re-arms the store report.
 */
export class FailureReporter {
  private storeReported = false;
  private seen = new Set<string>();
  constructor(private readonly sink: (d: Diagnostic) => void) {}

  report(outcome: Extract<StepOutcome, { ok: false }>): void {
    if (outcome.storeDown) {
      if (this.storeReported) return;
      this.storeReported = true;
      this.sink(outcome.diagnostic);
      return;
    }
    const k = `${outcome.diagnostic.code} ${outcome.diagnostic.message}`;
    if (this.seen.has(k)) return;
    this.seen.add(k);
    this.sink(outcome.diagnostic);
  }

  recovered(): void {
    this.storeReported = false;
  }
}
