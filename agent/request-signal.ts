import { tieSignals } from '../core/abort.js';

/**
 * One request's signal: aborted by its deadline or by any of the long-lived signals it is
 * tied to, with one listener on each, removed by `done()`. Not `AbortSignal.any`: on Node 20
 * that records every combined signal on each source until the source aborts, so a client
 * living for days would hold every request it ever made (a slow leak).
 */
export interface RequestSignal {
  signal: AbortSignal;
  /** The request settled: drop the deadline and the listeners. Idempotent. */
  done(): void;
}

export function requestSignal(timeoutMs: number | undefined, tiedTo: readonly AbortSignal[]): RequestSignal {
  const ac = new AbortController();
  const tie = tieSignals(tiedTo, ac);
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
  // The deadline alone keeps no process alive (as AbortSignal.timeout).
  timer?.unref();
  return {
    signal: ac.signal,
    done() {
      clearTimeout(timer);
      tie.done();
    },
  };
}
