import { describe, expect, test } from 'vitest';
import { buildKey, decodeFact, encodeFact } from '../../core/keys.js';
import { serviceSpecSchema } from '../../core/model/service.js';
import { pendingReasons } from '../../jobs/controllers/scheduler/plan-placements.js';
import type { Pending } from '../../jobs/controllers/scheduler/types.js';
import type { Fact } from '../../jobs/facts.js';
import type { KeyKind } from '../../core/keys.js';

function fact<K extends KeyKind>(kind: K, key: string, value: unknown): Fact<K> {
  const text = encodeFact(kind, value as never);
  return { key, kv: { key, value: text, createRevision: 1, modRevision: 1, version: 1, lease: 0 }, value: decodeFact(kind, key, text) };
}

const spec = serviceSpecSchema.parse({ name: 'web', image: 'web:9', replicas: 1 });
const p: Pending = {
  record: fact('replica', buildKey('replica', 'web', 'web-abcd1234'), { id: 'web-abcd1234', service: 'web', specRevision: 1, desired: 'run', createdAt: 0 }),
  spec: fact('service', buildKey('service', 'web'), spec),
};

describe('a pending replica whose image no node has', () => {
  test('CCA-E0316 is added when every node was excluded for the image, by the exclusion key, and not otherwise', () => {
    const image = 'image web:9 not in its catalogue';
    expect(pendingReasons(p, 'short', { [image]: 2 }).some((r) => r.includes('web:9') && r.includes('catalogue'))).toBe(true);
    expect(pendingReasons(p, 'short', { [image]: 2 }).length).toBe(3);
    expect(pendingReasons(p, 'short', { [image]: 1, cpu: 1 }).length).toBe(2);
    // Another image's exclusion (a text that also starts with "image ") is not this one's.
    expect(pendingReasons(p, 'short', { 'image web:8 not in its catalogue': 2 }).length).toBe(2);
  });
});
