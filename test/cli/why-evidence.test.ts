import { describe, expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { evidenceText, shownValue } from '../../cli/render/why.js';

describe('a replica record as evidence in `cca why`', () => {
  const key = '/replicas/web/web-abcd1234';
  const value = encodeFact('replica', { id: 'web-abcd1234', service: 'web', specRevision: 2, desired: 'stop', createdAt: 1, retired: true, origin: { by: 'scale' }, ended: { outcome: 'lost', node: 'n2' } });

  test('shows the sentence rendered from its typed outcome', () => {
    expect(evidenceText(shownValue(key, value), false)).toContain('reason=lost with node n2');
  });

  test('other facts and unreadable values are shown as they are', () => {
    expect(shownValue('/node-status/n1', '{"node":"n1"}')).toBe('{"node":"n1"}');
    expect(shownValue(key, 'not json')).toBe('not json');
    expect(shownValue(key, '')).toBe('');
  });
});
