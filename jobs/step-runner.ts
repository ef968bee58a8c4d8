import { isCcaError, makeDiagnostic } from '../core/diagnostics/error.js';
import type { Diagnostic } from '../core/diagnostics/types.js';
import type { Store } from '../db/store.js';
import type { Controller, Wakeup } from './controller.js';
import { messageOf } from '../core/diagnostics/index.js';
import { guardRefusals, recordRefusal, type Refusal } from './refusals.js';

/**
 * `refused`: writes the store refused outright (CCA-E0450 each); the step's other writes went
 * through, and the step is backed off like a failure (refusals.ts).
 */
export type StepOutcome = { ok: true; wake: Wakeup; writes: number; refused?: Diagnostic[] } | { ok: false; storeDown: boolean; diagnostic: Diagnostic };
export type StepFailure = Extract<StepOutcome, { ok: false }>;

/**
 * Run one step; turn whatever it throws into a coded diagnostic. Pure but for the store it
 * is handed (a graphile job's transaction, the in-process driver's store, the simulation's).
 */
export async function runStep(c: Controller, store: Store, now: number, random: () => number, subject: string | undefined): Promise<StepOutcome> {
  const refusals: Refusal[] = [];
  const counted = countingWrites(guardRefusals(store, refusals));
  try {
    const wake = await c.reconcile({ store: counted.store, now, random, ...(subject !== undefined ? { subject } : {}) });
    if (refusals.length === 0) return { ok: true, wake, writes: counted.writes() };
    const refused = refusals.map((r) => makeDiagnostic('CCA-E0450', { controller: c.name, subject: r.key, reason: r.reason }));
    // Shown by `cca why` on the refused key's subject, once (refusals.ts).
    for (let i = 0; i < refusals.length; i++) await recordRefusal(store, c.name, refusals[i]!, refused[i]!, now);
    return { ok: true, wake, writes: counted.writes(), refused };
  } catch (e) {
    return stepFailure(c, e);
  }
}

/**
 * The store as a step sees it, counting the writes it commits (a succeeded txn, a put, a
 * delete): a step's result names them, and a converged system shows zero.
 */
function countingWrites(store: Store): { store: Store; writes(): number } {
  let n = 0;
  const counted = new Proxy(store, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      if (prop === 'txn') {
        return async (req: Parameters<Store['txn']>[0]) => {
          const r = await target.txn(req);
          if (r.succeeded) n++;
          return r;
        };
      }
      if (prop === 'put' || prop === 'delete') {
        return async (...args: unknown[]) => {
          const r: unknown = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          n++;
          return r;
        };
      }
      return (v as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { store: counted, writes: () => n };
}

/**
 * What a failed step means: the store unavailable (environment-blamed, CCA-E0403) or a bug in
 * the step (CCA-E0404). Also for failures around a step (a job's BEGIN or COMMIT).
 */
export function stepFailure(c: Controller, e: unknown): StepFailure {
  if (isCcaError(e) && e.blame === 'environment') {
    return { ok: false, storeDown: true, diagnostic: storeDown(e.diagnostic.message) };
  }
  const reason = isCcaError(e) ? `${e.code} ${e.diagnostic.message}` : messageOf(e);
  return { ok: false, storeDown: false, diagnostic: makeDiagnostic('CCA-E0404', { controller: c.name, reason }) };
}

const storeDown = (reason: string): Diagnostic => makeDiagnostic('CCA-E0403', { reason });

/** Exponential backoff after consecutive failures, capped; `random` spreads retries apart. */
export function backoffMs(failures: number, random: () => number, baseMs = 100, maxMs = 5_000): number {
  const d = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 16));
  return Math.round(d * (0.75 + 0.5 * random()));
}

/** One step as a driver saw it, for metrics and traces. */
export interface StepInfo {
  controller: string;
  subject?: string;
  /** false also when the store refused some of its writes (the others went through). */
  ok: boolean;
  ms: number;
  /** Writes the step committed (0 when it failed: nothing of it committed). */
  writes?: number;
  /** A failed step's diagnostic code. */
  code?: string;
}

/** What a step's result adds to its StepInfo. */
export function stepResult(out: StepOutcome): Pick<StepInfo, 'ok' | 'writes' | 'code'> {
  if (!out.ok) return { ok: false, writes: 0, code: out.diagnostic.code };
  // A refused write fails the step for metrics though its other writes committed (refusals.ts).
  return out.refused?.length ? { ok: false, writes: out.writes, code: out.refused[0]!.code } : { ok: true, writes: out.writes };
}

/** Where a driver counts its steps (the server's metrics); injected, so drivers import no HTTP layer. */
export interface StepMetrics {
  step(info: StepInfo): void;
  /** A fan-out listed a controller's subjects (each then gets a step of its own). */
  fanout?(info: { controller: string; subjects: number }): void;
  /** A step's job was put off: the same step was running on another worker of this pod (jobs/graphile-driver.ts). */
  deferred?(info: { controller: string; subject?: string }): void;
}

/**
 * Reports a failing store once per outage (not once per step) and any other failure once
 * per distinct message; `recovered()` re-arms the store report.
 */
export class FailureReporter {
  private storeReported = false;
  private seen = new Set<string>();
  constructor(private readonly sink: (d: Diagnostic) => void) {}

  report(outcome: StepFailure): void {
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

/**
 * The bookkeeping after every step, the same in every driver (in-process, graphile-worker,
 * simulation): consecutive failures per step and the backoff they earn, failures reported
 * through one `FailureReporter`, and the store's recovery noticed once.
 */
export class StepBook {
  private readonly failures = new Map<string, number>();
  private readonly reporter: FailureReporter;
  private storeDown = false;

  constructor(
    sink: (d: Diagnostic) => void,
    private readonly opts: { onRecovered?: () => void; maxBackoffMs?: number } = {},
  ) {
    this.reporter = new FailureReporter(sink);
  }

  /**
   * Book a step's outcome (`stepKey`: its controller and subject); the answer is when it is
   * due again: its own wakeup after a success, a backoff after a failure.
   */
  settle(stepKey: string, out: StepOutcome, now: number, random: () => number): number | undefined {
    if (out.ok && out.refused && out.refused.length > 0) {
      // Its other writes went through; the refused ones are reported once and backed off.
      const n = (this.failures.get(stepKey) ?? 0) + 1;
      this.failures.set(stepKey, n);
      for (const d of out.refused) this.reporter.report({ ok: false, storeDown: false, diagnostic: d });
      return now + backoffMs(n, random, 100, this.opts.maxBackoffMs ?? 5_000);
    }
    if (out.ok) {
      this.failures.delete(stepKey);
      if (this.storeDown) {
        this.storeDown = false;
        this.reporter.recovered();
        this.opts.onRecovered?.();
      }
      return out.wake.at;
    }
    const n = (this.failures.get(stepKey) ?? 0) + 1;
    this.failures.set(stepKey, n);
    if (out.storeDown) this.storeDown = true;
    this.reporter.report(out);
    return now + backoffMs(n, random, 100, this.opts.maxBackoffMs ?? 5_000);
  }

  /** The store failed outside any step (a driver's watch): one report per outage, like a step's. */
  storeFailed(reason: string): void {
    this.storeDown = true;
    this.reporter.report({ ok: false, storeDown: true, diagnostic: storeDown(reason) });
  }
}
