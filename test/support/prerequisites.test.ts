import { expect, test } from 'vitest';
import { excludedGroups } from './prerequisites.js';

test('a group is left out only by name, never under CI=true, and unknown names are refused', () => {
  expect(excludedGroups({})).toEqual([]);
  expect(excludedGroups({ CCA_TEST_WITHOUT: 'containerd, netns' })).toEqual(['containerd', 'netns']);
  expect(() => excludedGroups({ CCA_TEST_WITHOUT: 'containerd', CI: 'true' })).toThrow(/refused under CI=true/);
  expect(() => excludedGroups({ CCA_TEST_WITHOUT: 'docker' })).toThrow(/unknown groups: docker/);
});
