import { expect, test, vi } from 'vitest';
import { CcaError, makeDiagnostic, type Diagnostic } from '../../core/diagnostics/index.js';
import type { Store } from '../../db/store.js';
import { oneReportPerOutage, watchStoreHealth } from '../../server/store-health.js';

const unavailable = makeDiagnostic('CCA-E0111', { backend: 'postgres', reason: 'connection refused', target: 'db' });
const stepsFailing = makeDiagnostic('CCA-E0403', { reason: 'the store is unavailable' });
const bug = makeDiagnostic('CCA-E0404', { controller: 'replica', reason: 'boom' });

test('a failing store is reported once per outage by the whole pod, whoever meets it first', () => {
  const seen: Diagnostic[] = [];
  const gate = oneReportPerOutage((d) => seen.push(d));
  // The graphile driver and the health probe both meet the outage: one report.
  gate.report(stepsFailing);
  gate.report(unavailable);
  gate.report(stepsFailing);
  gate.report(bug); // not a store failure: passes
  expect(seen.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0404']);
  // The store answers the health probe again: the next outage is reported again, once.
  gate.answered(gate.asking());
  gate.report(unavailable);
  gate.report(stepsFailing);
  expect(seen.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0404', 'CCA-E0111']);
});

test('an answer to a question asked before the gate closed does not open it (Postgres shutting down answers on open connections)', () => {
  const seen: Diagnostic[] = [];
  const gate = oneReportPerOutage((d) => seen.push(d));
  const asked = gate.asking(); // the probe asks on a connection still open
  gate.report(stepsFailing); // a driver's new connection is refused: reported
  gate.answered(asked); // the old connection answers: says nothing about after the refusal
  gate.report(unavailable); // the probe's next question fails
  expect(seen.map((d) => d.code)).toEqual(['CCA-E0403']);
  gate.answered(gate.asking()); // asked after the gate closed, answered: the outage is over
  gate.report(unavailable);
  expect(seen.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0111']);
});

test('the health probe: a stale answer in flight while a driver reports, then its own failure: one report', async () => {
  vi.useFakeTimers();
  try {
    const seen: Diagnostic[] = [];
    const gate = oneReportPerOutage((d) => seen.push(d));
    let answer: (() => void) | undefined;
    let down = false;
    const store = {
      revision: () =>
        down
          ? Promise.reject(new CcaError('CCA-E0111', { backend: 'postgres', reason: 'connect ECONNREFUSED', target: 'db' }))
          : new Promise<number>((resolve) => (answer = () => resolve(7))),
    } as unknown as Store;
    const recovered = vi.fn();
    const probe = watchStoreHealth(store, gate, recovered, 1_000);
    await vi.advanceTimersByTimeAsync(1_000); // the probe asks; the answer is held
    gate.report(stepsFailing); // meanwhile a driver meets the outage
    answer!(); // the open connection answers
    await vi.advanceTimersByTimeAsync(0);
    down = true;
    await vi.advanceTimersByTimeAsync(1_000); // the probe's next question fails
    expect(seen.map((d) => d.code)).toEqual(['CCA-E0403']);
    down = false;
    await vi.advanceTimersByTimeAsync(1_000); // asked after the refusal and answered: back
    answer!();
    await vi.advanceTimersByTimeAsync(0);
    expect(recovered).toHaveBeenCalledTimes(1);
    gate.report(unavailable); // the next outage is reported again
    expect(seen.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0111']);
    probe.stop();
  } finally {
    vi.useRealTimers();
  }
});
