import { describe, expect, test } from 'vitest';
import { planRoll, rollBounds, type RollCounts } from '../../jobs/controllers/rollout-plan.js';

const counts = (c: Partial<RollCounts>): RollCounts => ({ desired: 3, newLive: 0, newReady: 0, oldLive: 3, oldReady: 3, ...c });

describe('roll bounds', () => {
  test('percentages resolve against desired: surge rounds up, unavailable down', () => {
    expect(rollBounds({ maxSurge: '25%', maxUnavailable: '25%' }, 10)).toEqual({ surge: 3, unavailable: 2, minReady: 8, maxLive: 13 });
    expect(rollBounds({ maxSurge: '10%', maxUnavailable: '10%' }, 3)).toEqual({ surge: 1, unavailable: 0, minReady: 3, maxLive: 4 });
    expect(rollBounds({ maxSurge: '50%', maxUnavailable: '50%' }, 1)).toEqual({ surge: 1, unavailable: 0, minReady: 1, maxLive: 2 });
    expect(rollBounds({ maxSurge: 2, maxUnavailable: 5 }, 3)).toEqual({ surge: 2, unavailable: 5, minReady: 0, maxLive: 5 });
  });

  test('both resolving to zero lifts unavailable to 1 (as Kubernetes does)', () => {
    expect(rollBounds({ maxSurge: '0%', maxUnavailable: '25%' }, 3)).toEqual({ surge: 0, unavailable: 1, minReady: 2, maxLive: 3 });
    expect(rollBounds({ maxSurge: 0, maxUnavailable: 0 }, 3).unavailable).toBe(1);
  });

  test('a stateful service (volumes) rolls without surge: stop one old, then replace it', () => {
    const b = rollBounds({ maxSurge: '25%', maxUnavailable: 0 }, 3, true);
    expect(b).toEqual({ surge: 0, unavailable: 1, minReady: 2, maxLive: 3 });
    expect(planRoll(counts({}), b, false)).toMatchObject({ create: 0, stopReady: 1 });
    // Its replacement is created only once the stopped copy has retired (left its node).
    expect(planRoll(counts({ oldLive: 2, oldReady: 2, stopping: 1 }), b, false)).toMatchObject({ create: 0, stopReady: 0 });
    expect(planRoll(counts({ oldLive: 2, oldReady: 2 }), b, false)).toMatchObject({ create: 1, stopReady: 0 });
  });
});

describe('one step of a roll', () => {
  const defaults = rollBounds({ maxSurge: 1, maxUnavailable: 0 }, 3);

  test('surge 1, unavailable 0: one new at a time, an old one stops only once a new one is ready', () => {
    expect(planRoll(counts({}), defaults, false)).toMatchObject({ create: 1, stopUnready: 0, stopReady: 0 });
    // The new one is not ready yet: nothing more (4 live is the cap, 3 ready the floor).
    expect(planRoll(counts({ newLive: 1 }), defaults, false)).toMatchObject({ create: 0, stopUnready: 0, stopReady: 0 });
    expect(planRoll(counts({ newLive: 1, newReady: 1 }), defaults, false)).toMatchObject({ create: 0, stopReady: 1 });
    expect(planRoll(counts({ newLive: 1, newReady: 1, oldLive: 2, oldReady: 2 }), defaults, false)).toMatchObject({ create: 1, stopReady: 0 });
  });

  test('maxUnavailable 0 never stops a ready old replica while ready would drop below desired', () => {
    for (let newLive = 0; newLive <= 4; newLive++) {
      for (let newReady = 0; newReady <= newLive; newReady++) {
        for (let oldReady = 0; oldReady <= 3; oldReady++) {
          const p = planRoll(counts({ newLive, newReady, oldReady }), defaults, false);
          expect(newReady + oldReady - p.stopReady >= 3 || p.stopReady === 0).toBe(true);
        }
      }
    }
  });

  test('surge 0, unavailable 1: stops first, then replaces', () => {
    const b = rollBounds({ maxSurge: 0, maxUnavailable: 1 }, 3);
    expect(planRoll(counts({}), b, false)).toMatchObject({ create: 0, stopReady: 1 });
    // Its replacement is created only once the stopped copy has retired (left its node).
    expect(planRoll(counts({ oldLive: 2, oldReady: 2, stopping: 1 }), b, false)).toMatchObject({ create: 0, stopReady: 0 });
    expect(planRoll(counts({ oldLive: 2, oldReady: 2 }), b, false)).toMatchObject({ create: 1, stopReady: 0 });
    expect(planRoll(counts({ oldLive: 2, oldReady: 2, newLive: 1 }), b, false)).toMatchObject({ create: 0, stopReady: 0 });
  });

  test('one replica: surge 1 overlaps old and new; unavailable 1 may go to zero', () => {
    const overlap = rollBounds({ maxSurge: 1, maxUnavailable: 0 }, 1);
    expect(planRoll({ desired: 1, newLive: 0, newReady: 0, oldLive: 1, oldReady: 1 }, overlap, false)).toMatchObject({ create: 1, stopReady: 0 });
    expect(planRoll({ desired: 1, newLive: 1, newReady: 0, oldLive: 1, oldReady: 1 }, overlap, false)).toMatchObject({ create: 0, stopReady: 0 });
    expect(planRoll({ desired: 1, newLive: 1, newReady: 1, oldLive: 1, oldReady: 1 }, overlap, false)).toMatchObject({ stopReady: 1 });
    const gap = rollBounds({ maxSurge: 0, maxUnavailable: 1 }, 1);
    expect(planRoll({ desired: 1, newLive: 0, newReady: 0, oldLive: 1, oldReady: 1 }, gap, false)).toMatchObject({ create: 0, stopReady: 1 });
  });

  test('old replicas that are not ready go first, within the room the unready new ones leave', () => {
    // 3 old, one of them not ready; a new one not ready yet: room = 4 − 3 − 1 = 0.
    expect(planRoll(counts({ oldReady: 2, newLive: 1 }), defaults, false)).toMatchObject({ stopUnready: 0, stopReady: 0 });
    // The new one is ready: room 1 goes to the unready old one, none to a ready one.
    expect(planRoll(counts({ oldReady: 2, newLive: 1, newReady: 1 }), defaults, false)).toMatchObject({ stopUnready: 1, stopReady: 0 });
    // Every old replica down (their node lost): unavailable 1 lets one go at once.
    const b = rollBounds({ maxSurge: 1, maxUnavailable: 1 }, 3);
    expect(planRoll(counts({ oldReady: 0 }), b, false)).toMatchObject({ create: 1, stopUnready: 1 });
  });

  test('a paused roll stops nothing and creates only back up to desired; no old replicas is no roll', () => {
    expect(planRoll(counts({ newLive: 1, newReady: 1 }), defaults, true)).toMatchObject({ create: 0, stopUnready: 0, stopReady: 0 });
    expect(planRoll(counts({ newLive: 1 }), defaults, true)).toMatchObject({ create: 0, stopUnready: 0, stopReady: 0 });
    // Two old replicas lost with their node while paused: 1 old + 1 new live, 3 desired.
    expect(planRoll(counts({ newLive: 1, oldLive: 1, oldReady: 1 }), defaults, true)).toMatchObject({ create: 1, stopUnready: 0, stopReady: 0 });
    expect(planRoll(counts({ oldLive: 0, oldReady: 0 }), defaults, false)).toMatchObject({ create: 0, stopUnready: 0, stopReady: 0 });
  });

  test('scaling down during a roll: no new replicas beyond desired; old ones go while ready stays ≥ floor', () => {
    const b = rollBounds({ maxSurge: 1, maxUnavailable: 0 }, 2);
    expect(planRoll({ desired: 2, newLive: 0, newReady: 0, oldLive: 5, oldReady: 5 }, b, false)).toMatchObject({ create: 0, stopReady: 3 });
  });

  test('driven to completion from every starting shape, the bounds hold at every step', () => {
    for (const [surge, unavailable] of [[1, 0], [0, 1], ['25%', '25%'], [2, 0], ['100%', 0], [0, '50%']] as const) {
      for (const desired of [1, 2, 3, 5, 10]) {
        const b = rollBounds({ maxSurge: surge, maxUnavailable: unavailable }, desired);
        let c: RollCounts = { desired, newLive: 0, newReady: 0, oldLive: desired, oldReady: desired };
        let steps = 0;
        while (c.oldLive > 0 || c.newLive < desired) {
          const p = planRoll(c, b, false);
          const readyAfter = c.newReady + c.oldReady - p.stopReady;
          expect(readyAfter >= b.minReady || p.stopReady === 0, `${surge}/${unavailable} of ${desired}`).toBe(true);
          expect(c.newLive + c.oldLive + p.create).toBeLessThanOrEqual(Math.max(b.maxLive, c.newLive + c.oldLive));
          // Apply: stops take effect, creations appear not ready, then every new replica becomes ready.
          c = { desired, oldLive: c.oldLive - p.stopReady - p.stopUnready, oldReady: c.oldReady - p.stopReady, newLive: c.newLive + p.create, newReady: c.newReady };
          if (p.create === 0 && p.stopReady === 0 && p.stopUnready === 0) c = { ...c, newReady: c.newLive };
          if (c.oldLive === 0 && c.newLive < desired) c = { ...c, newLive: desired, newReady: desired }; // plain scale-up finishes
          expect(++steps, `${surge}/${unavailable} of ${desired} makes progress`).toBeLessThan(100);
        }
      }
    }
  });
});
