import { describe, expect, test } from 'vitest';
import { buildKey } from '../../core/keys.js';
import { autoscalerController, endpointController, replicaController, rolloutController } from '../../jobs/controllers/index.js';
import { serviceOfKey } from '../../jobs/ids.js';

describe('which service a changed key wakes', () => {
  const replica = 'web-abcd1234';
  test('a service segment, or the service of the replica a key names; nothing for node-wide keys', () => {
    expect(serviceOfKey(buildKey('service', 'web'))).toBe('web');
    expect(serviceOfKey(buildKey('replica', 'web', replica))).toBe('web');
    expect(serviceOfKey(buildKey('autoscale', 'web'))).toBe('web');
    expect(serviceOfKey(buildKey('placement', replica))).toBe('web');
    expect(serviceOfKey(buildKey('observed', 'n1', replica))).toBe('web');
    expect(serviceOfKey(buildKey('lost', 'n1', replica))).toBe('web');
    expect(serviceOfKey(buildKey('nodeStatus', 'n1'))).toBeUndefined();
    expect(serviceOfKey(buildKey('nodeOp', 'n1'))).toBeUndefined();
    expect(serviceOfKey('/not/a/key')).toBeUndefined();
  });

  test('the per-service controllers route by it', () => {
    for (const c of [replicaController, rolloutController, endpointController, autoscalerController]) {
      expect(c.subjectOf!(buildKey('observed', 'n1', replica))).toBe('web');
      expect(c.subjectOf!(buildKey('service', 'web'))).toBe('web');
      expect(c.subjectOf!(buildKey('node', 'n1'))).toBeUndefined();
    }
  });
});
