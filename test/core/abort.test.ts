import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { tieSignals } from '../../core/abort.js';

/** Listeners plus what Node 20's AbortSignal.any records on a source (kDependantSignals). */
function retained(signal: AbortSignal): number {
  const dependants = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = dependants === undefined ? undefined : (signal as unknown as Record<symbol, { size?: number } | undefined>)[dependants];
  return getEventListeners(signal, 'abort').length + (set?.size ?? 0);
}

describe('tieSignals', () => {
  it('leaves nothing on a long-lived source once each tie is done', () => {
    const lifetime = new AbortController();
    for (let i = 0; i < 500; i++) {
      const request = new AbortController();
      const tie = tieSignals([request.signal, lifetime.signal]);
      tie.done();
    }
    expect(retained(lifetime.signal)).toBe(0);
  });

  it('aborts when any source aborts, with that source reason', () => {
    const a = new AbortController();
    const b = new AbortController();
    const tie = tieSignals([a.signal, b.signal]);
    b.abort('closing');
    expect(tie.signal.aborted).toBe(true);
    expect(tie.signal.reason).toBe('closing');
    tie.done();
    tie.done();
    expect(retained(a.signal)).toBe(0);
  });

  it('is aborted at once when a source already is', () => {
    const gone = new AbortController();
    gone.abort('gone');
    const live = new AbortController();
    const tie = tieSignals([live.signal, gone.signal]);
    expect(tie.signal.aborted).toBe(true);
    tie.done();
    expect(retained(live.signal)).toBe(0);
  });
});
