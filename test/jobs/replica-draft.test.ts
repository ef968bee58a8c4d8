import { expect, test } from 'vitest';
import { buildKey } from '../../core/keys.js';
import { validateService } from '../../core/model/index.js';
import { MemoryStore } from '../../db/memory.js';
import { DECISION_LIMITS } from '../../jobs/decisions/bounds.js';
import { draftReplica } from '../../jobs/controllers/replica-draft.js';

/** Issue 20: a replica record's size does not follow what a node reports about a failure. */
test("a replacement carries the agent's failure texts clipped, whatever their size", () => {
  const r = validateService({ name: 'web', image: 'busybox:1.35' });
  if (!r.ok) throw new Error('fixture');
  const key = buildKey('service', 'web');
  const spec = { key, kv: { key, value: '', createRevision: 1, modRevision: 1, version: 1, lease: 0 }, value: r.value };
  const huge = 'x'.repeat(1_000_000);
  const draft = draftReplica({ store: new MemoryStore(), now: 1, random: () => 0.5 }, spec, { fact: key, modRevision: 1 }, { origin: { by: 'scale' } }, {
    attempt: 3,
    notBefore: 2,
    failure: huge,
    diagnostic: { code: `CCA-E0530${huge}`, message: huge },
  });
  expect(draft.record.failure!.length).toBeLessThanOrEqual(DECISION_LIMITS.maxTextChars);
  expect(draft.record.failure!.endsWith('…')).toBe(true);
  expect(draft.record.failureDiagnostic!.message.length).toBeLessThanOrEqual(DECISION_LIMITS.maxTextChars);
  expect(draft.record.failureDiagnostic!.code.length).toBeLessThanOrEqual(16);
  // A short text is kept whole.
  const small = draftReplica({ store: new MemoryStore(), now: 1, random: () => 0.5 }, spec, { fact: key, modRevision: 1 }, { origin: { by: 'scale' } }, { attempt: 1, notBefore: 2, failure: 'exit 1', diagnostic: { code: 'CCA-E0530', message: 'not found' } });
  expect(small.record).toMatchObject({ failure: 'exit 1', failureDiagnostic: { code: 'CCA-E0530', message: 'not found' } });
});
