import { describe, expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { LIMITS, SPEC_LIMITS, specBytes, storedSpecMaxBytes, validateService } from '../../core/model/index.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { limits } from '../../db/keyspace.js';
import { newSecretKey, parseKeyring, sealSpec, SecretBox } from '../../handlers/secret-box.js';
import { largestSpec } from '../support/largest-spec.js';
import { MemoryStore } from '../../db/memory.js';
import { applyServices, InvalidSpecs } from '../../handlers/apply.js';

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

  test('an apply of more services than the limit is CCA-E0332; more stored bytes than the limit CCA-E0333', async () => {
    const store = new MemoryStore();
    const many = Array.from({ length: SPEC_LIMITS.applyServices + 1 }, (_, i) => ({ name: `s${i}`, image: 'web:1' }));
    const refused = (e: unknown, code: string) => e instanceof InvalidSpecs && e.all[0]?.code === code;
    await expect(applyServices(store, { kind: 'specs', services: many, prune: false }, false)).rejects.toSatisfy((e) => refused(e, 'CCA-E0332'));
    await applyServices(store, { kind: 'specs', services: many.slice(1), prune: false }, false);
    const big = [largestSpec('big1', 1), largestSpec('big2', 1), largestSpec('big3', 1), largestSpec('big4', 1), largestSpec('big5', 1)];
    await expect(applyServices(store, { kind: 'specs', services: big, prune: false }, false, box)).rejects.toSatisfy((e) => refused(e, 'CCA-E0333'));
    await applyServices(store, { kind: 'specs', services: big.slice(0, 2), prune: false }, false, box);
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
