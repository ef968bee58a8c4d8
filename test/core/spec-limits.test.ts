import { describe, expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { LIMITS, SPEC_LIMITS, specBytes, storedSpecMaxBytes, validateService, validateServiceSet } from '../../core/model/index.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { limits } from '../../db/keyspace.js';
import { newSecretKey, parseKeyring, sealSpec, SecretBox } from '../../handlers/secret-box.js';
import { largestSpec } from '../support/largest-spec.js';

const box = new SecretBox(parseKeyring(newSecretKey('k1'), 'test'));

describe('spec size limits (docs/limits.md)', () => {
  test('the largest spec is accepted at exactly the limit; one byte more is CCA-E0331 with its size', () => {
    const ok = validateService(largestSpec('big', 1));
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(specBytes(ok.value)).toBe(SPEC_LIMITS.serviceBytes);
    const over = validateService(largestSpec('big', 1, 1));
    expect(over.ok).toBe(false);
    if (!over.ok) expect(over.issues).toEqual([{ code: 'CCA-E0331', params: { service: 'big', bytes: SPEC_LIMITS.serviceBytes + 1, limit: SPEC_LIMITS.serviceBytes }, path: [] }]);
  });

  test('a field over its limit is CCA-E0330 naming the field, its size and the limit', () => {
    const r = validateService({ name: 'w', image: 'web:1', env: { A: 'y'.repeat(LIMITS.stringLength + 1) } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatchObject({ code: 'CCA-E0330', params: { what: 'environment value', size: LIMITS.stringLength + 1, limit: LIMITS.stringLength }, path: ['env', 'A'] });
  });

  test('an apply of more services than the limit is CCA-E0332', () => {
    const specs = Array.from({ length: SPEC_LIMITS.applyServices + 1 }, (_, i) => serviceSpecSchema.parse({ name: `s${i}`, image: 'web:1' }));
    expect(validateServiceSet(specs)[0]).toMatchObject({ code: 'CCA-E0332', params: { count: SPEC_LIMITS.applyServices + 1, limit: SPEC_LIMITS.applyServices } });
    expect(validateServiceSet(specs.slice(1))).toEqual([]);
  });

  test('the largest spec, sealed as stored, stays under its stated bound, which fits the store', () => {
    const spec = serviceSpecSchema.parse(largestSpec('big', 1));
    const stored = encodeFact('service', sealSpec(box, spec, undefined));
    expect(new TextEncoder().encode(stored).length).toBeLessThanOrEqual(storedSpecMaxBytes());
    expect(new TextEncoder().encode(stored).length).toBeGreaterThan(SPEC_LIMITS.serviceBytes); // sealing grew it
    expect(storedSpecMaxBytes() + 4096).toBeLessThan(limits.maxValueBytes);
    // One apply of the largest spec fits the per-apply limit, so it can be applied at all.
    expect(new TextEncoder().encode(stored).length).toBeLessThanOrEqual(SPEC_LIMITS.applyStoredBytes);
  });
});
