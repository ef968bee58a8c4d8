import { describe, expect, test, vi } from 'vitest';
import { EXPECTED, outcomeStory } from './outcome-scenario.js';

/**
 * Every sentence about a replica reworded (reversed, in brackets): the controllers must decide
 * exactly as with the real wording (outcomes.test.ts runs the same story), because they read
 * the typed fields, never a sentence.
 */
vi.mock('../../core/model/replica-outcome.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../core/model/replica-outcome.js')>();
  const reword = <A extends unknown[]>(f: (...a: A) => string) => (...a: A) => `⟨${[...f(...a)].reverse().join('')}⟩`;
  return {
    ...real,
    exitText: reword(real.exitText),
    endedText: reword(real.endedText),
    stopSeenText: reword(real.stopSeenText),
    stopByText: reword(real.stopByText),
    originText: reword(real.originText),
    replicaReason: reword(real.replicaReason),
  };
});

describe('rewording a replica sentence changes no decision', () => {
  test('the same story with every sentence reworded: the same outcomes, rollout and counts', async () => {
    const { digest, stuckReason } = await outcomeStory();
    // The wording did change where it is shown...
    expect(stuckReason).toContain('a replica ⟨)syawla tratser( 1n no 2 edoc htiw detixe⟩');
    // ...and nothing the controllers decided did.
    expect(digest).toEqual(EXPECTED);
  });
});
