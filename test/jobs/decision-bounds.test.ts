import { expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { limits, utf8Length } from '../../db/keyspace.js';
import { decisionMaxBytes, DECISION_LIMITS } from '../../jobs/decisions/bounds.js';
import { causedBy, decide } from '../../jobs/decisions/record.js';

test('the decision bound is under the store value limit, and holds for the worst input decide can be given', () => {
  expect(decisionMaxBytes()).toBeLessThan(limits.maxValueBytes);
  // Control characters take 6 bytes each in JSON: the worst case for every string.
  const worst = (n: number) => '\u0001'.repeat(n);
  const key = (i: number) => `/audit/${worst(limits.maxKeyBytes - 8 - String(i).length)}${i}`;
  const d = decide({
    kind: 'node',
    subject: worst(200),
    controller: worst(500),
    action: worst(50_000),
    tag: 't',
    at: 1,
    evidence: Array.from({ length: DECISION_LIMITS.maxEvidence * 2 }, (_, i) => ({ key: key(i), modRevision: Number.MAX_SAFE_INTEGER, value: worst(DECISION_LIMITS.embedMaxBytes) })),
    cause: causedBy(`/decisions/node/${worst(1_900)}`),
    reasons: Array.from({ length: 100 }, () => worst(50_000)),
    basis: worst(50_000),
  });
  const bytes = utf8Length(encodeFact('decision', d.decision));
  expect(d.decision.evidence).toHaveLength(DECISION_LIMITS.maxEvidence);
  expect(d.decision.reasons).toHaveLength(DECISION_LIMITS.maxReasons);
  expect(bytes).toBeLessThanOrEqual(decisionMaxBytes());
  expect(bytes).toBeGreaterThan(decisionMaxBytes() / 2); // the input really is near the worst
});
