import { describe, expect, it } from 'vitest';
import type { Controller } from '../../jobs/controller.js';
import { WakeTable } from '../../jobs/wake-table.js';

const ctl = (name: string): Controller => ({ name, watches: [], reconcile: async () => ({}) });

describe('WakeTable.waiting: the in-process driver\'s queue for /metrics', () => {
  it('counts steps due and not taken, by controller, with the oldest wait; future and running ones are not waiting', () => {
    const a = ctl('a');
    const b = ctl('b');
    const t = new WakeTable([a, b]);
    t.wake(a, 'x', 1_000);
    t.wake(a, 'y', 4_000);
    t.wake(b, undefined, 9_000); // not due yet
    expect(t.waiting(5_000)).toEqual([{ controller: 'a', waiting: 2, oldestMs: 4_000 }]);
    const [first] = t.take(5_000); // both of a's steps now run
    t.wake(first!.controller, first!.subject, 5_000); // due again while it runs: not waiting yet
    expect(t.waiting(10_000)).toEqual([{ controller: 'b', waiting: 1, oldestMs: 1_000 }]);
    t.done(first!);
    expect(t.waiting(10_000).sort((x, y) => x.controller.localeCompare(y.controller))).toEqual([{ controller: 'a', waiting: 1, oldestMs: 5_000 }, { controller: 'b', waiting: 1, oldestMs: 1_000 }]);
  });
});
