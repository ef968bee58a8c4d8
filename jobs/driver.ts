import { isCcaError } from '../core/diagnostics/error.js';
import type { Diagnostic } from '../core/diagnostics/types.js';
import type { Store } from '../db/store.js';
import { changesOfEvents, type Controller } from './controller.js';
import { backoffMs, runStep, StepBook, stepResult, type StepMetrics } from './step-runner.js';
import { WakeTable, type DueStep } from './wake-table.js';

/** Time for the driver: the real clock in a server, a virtual one in tests. */
export interface DriverClock {
  now(): number;
  /** Resolve after `ms`, or at once when the signal aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemClock: DriverClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const t = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};

export interface DriverOptions {
  store: Store;
  controllers: readonly Controller[];
  clock?: DriverClock;
  random?: () => number;
  /** A failing store once per outage; other step failures once per distinct message. */
  onDiagnostic?: (d: Diagnostic) => void;
  /** The store answers again after a reported outage. */
  onRecovered?: () => void;
  /** Counts every step (the server's metrics). */
  metrics?: StepMetrics;
  /** Longest wait between retries of a failing step. */
  maxBackoffMs?: number;
}

export interface Driver {
  /** Resolves once nothing is running or due and every committed change has been routed. */
  idle(): Promise<void>;
  stop(): Promise<void>;
  /** Its queue now: steps due and not yet running, by controller (the server's metrics). */
  queue(): { controller: string; waiting: number; oldestMs: number }[];
}

/**
 * The in-process driver: runs controllers over any Store. A step is due when its timer
 * falls due or a key it watches changes (followed with `store.watch` from the revision the
 * driver started at); the same (controller, subject) never runs twice at once; a failing
 * step backs off exponentially and a failing store is reported once per outage.
 */
export function startDriver(opts: DriverOptions): Driver {
  const { store } = opts;
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? Math.random;
  const table = new WakeTable(opts.controllers);
  const book = new StepBook((d) => opts.onDiagnostic?.(d), {
    ...(opts.onRecovered ? { onRecovered: opts.onRecovered } : {}),
    ...(opts.maxBackoffMs !== undefined ? { maxBackoffMs: opts.maxBackoffMs } : {}),
  });
  const stopper = new AbortController();
  const inflight = new Set<Promise<void>>();
  let wakeLoop = new AbortController();
  let seenRevision = 0;
  const poke = () => wakeLoop.abort();

  table.kickAll(clock.now());

  async function follow(): Promise<void> {
    let attempt = 0;
    while (!stopper.signal.aborted) {
      try {
        const from = await store.revision();
        seenRevision = Math.max(seenRevision, from);
        if (attempt > 0) table.kickAll(clock.now()); // a gap in what we saw: everyone looks again
        poke();
        // With each put's previous value: a controller may pass over a change it cannot act on (`ignores`).
        for await (const batch of store.watch({ prefix: '', fromRevision: from + 1, prevKv: true, signal: stopper.signal })) {
          attempt = 0;
          table.changed(changesOfEvents(batch.events), clock.now());
          seenRevision = batch.revision;
          poke();
        }
      } catch (e) {
        if (stopper.signal.aborted) return;
        if (isCcaError(e) && e.blame === 'environment') book.storeFailed(e.diagnostic.message);
      }
      attempt++;
      await clock.sleep(backoffMs(attempt, random, 100, opts.maxBackoffMs ?? 5_000), stopper.signal);
    }
  }

  async function runOne(step: DueStep): Promise<void> {
    const started = clock.now();
    const out = await runStep(step.controller, store, started, random, step.subject);
    table.done(step);
    opts.metrics?.step({ controller: step.controller.name, ...(step.subject !== undefined ? { subject: step.subject } : {}), ...stepResult(out), ms: clock.now() - started });
    const next = book.settle(step.key, out, clock.now(), random);
    if (next !== undefined) table.wake(step.controller, step.subject, next);
    poke();
  }

  async function fanOut(): Promise<void> {
    for (const c of [...table.fanouts]) {
      table.fanouts.delete(c);
      try {
        const subjects = (await c.subjects?.(store)) ?? [];
        opts.metrics?.fanout?.({ controller: c.name, subjects: subjects.length });
        for (const s of subjects) table.wake(c, s, clock.now());
      } catch {
        table.fanouts.add(c); // retried on the next turn, after the backoff below
        await clock.sleep(backoffMs(2, random), stopper.signal);
      }
    }
  }

  async function loop(): Promise<void> {
    while (!stopper.signal.aborted) {
      wakeLoop = new AbortController();
      await fanOut();
      for (const step of table.take(clock.now())) {
        const p = runOne(step).finally(() => inflight.delete(p));
        inflight.add(p);
      }
      const next = table.nextAt();
      const wait = table.fanouts.size > 0 ? 0 : next === undefined ? 60_000 : Math.max(0, next - clock.now());
      if (wait > 0 || inflight.size > 0) await clock.sleep(wait === 0 ? 60_000 : wait, wakeLoop.signal);
    }
  }

  const following = follow();
  const looping = loop();

  return {
    queue: () => table.waiting(clock.now()),
    async idle() {
      for (;;) {
        await new Promise((r) => setTimeout(r, 1));
        const next = table.nextAt();
        const busy = inflight.size > 0 || table.fanouts.size > 0 || (next !== undefined && next <= clock.now());
        if (!busy && seenRevision >= (await store.revision())) return;
      }
    },
    async stop() {
      stopper.abort();
      wakeLoop.abort();
      await Promise.allSettled([following, looping, ...inflight]);
    },
  };
}
