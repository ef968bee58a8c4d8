import { expect, test } from 'vitest';
import { makeDiagnostic, type Diagnostic } from '../../core/diagnostics/index.js';
import { oneReportPerOutage } from '../../server/store-health.js';

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
  gate.answered();
  gate.report(unavailable);
  gate.report(stepsFailing);
  expect(seen.map((d) => d.code)).toEqual(['CCA-E0403', 'CCA-E0404', 'CCA-E0111']);
});
