import { describe, expect, test } from 'vitest';
import { EXPECTED, outcomeStory } from './outcome-scenario.js';

describe('replica outcomes are typed fields', () => {
  test('controllers decide on them: a completed job counts, a crash is restarted, a stuck roll names the crash', async () => {
    const { digest, stuckReason } = await outcomeStory();
    expect(digest).toEqual(EXPECTED);
    expect(stuckReason).toBe('3/3 new replicas not ready: a replica exited with code 2 on n1 (restart always); 3 not created yet (the roll waits for the others)');
  });
});
