/**
 * A signal that aborts when any of its sources does, with one listener per source, removed by
 * `done()`. Not `AbortSignal.any`: on Node 20 that records every combined signal on each
 * source until the source aborts, so a long-lived source (a client's or a pod's lifetime)
 * would hold every request it was ever combined with: a slow leak in a process that lives
 * for days.
 */
export interface TiedSignal {
  signal: AbortSignal;
  /** Untie from the sources. Idempotent; the signal keeps whatever state it reached. */
  done(): void;
}

export function tieSignals(sources: readonly AbortSignal[], controller: AbortController = new AbortController()): TiedSignal {
  const unties: (() => void)[] = [];
  for (const s of sources) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const onAbort = () => controller.abort(s.reason);
    s.addEventListener('abort', onAbort, { once: true });
    unties.push(() => s.removeEventListener('abort', onAbort));
  }
  return {
    signal: controller.signal,
    done() {
      for (const untie of unties.splice(0)) untie();
    },
  };
}
