import { describe, expect, it } from 'vitest';
import { Milestones } from '../../bench/support/milestones.js';

describe('Milestones (bench/support/milestones.ts)', () => {
  it('records the first poll at which each count reached each share, in seconds from t0', () => {
    const m = new Milestones(['placed', 'running'] as const, 10, 1_000);
    m.seen(1_500, { placed: 1, running: 0 });
    m.seen(2_000, { placed: 6, running: 1 });
    m.seen(2_500, { placed: 4, running: 5 }); // a count may fall back: the first time stands
    m.seen(3_000, { placed: 10, running: 9 });
    expect(m.json()).toEqual({
      placed: { '10%': 0.5, '50%': 1, '90%': 2, '100%': 2 },
      running: { '10%': 1, '50%': 1.5, '90%': 2, '100%': null },
    });
    expect(m.text()).toBe('placed 10% 0.50 s, 50% 1.00 s, 90% 2.00 s, 100% 2.00 s; running 10% 1.00 s, 50% 1.50 s, 90% 2.00 s, 100% —');
  });
});
