import { describe, expect, it } from 'vitest';
import { ServerError } from '../../agent/core/errors.js';
import type { ControlPlane } from '../../agent/core/ports.js';
import { Reporter } from '../../agent/core/reporting.js';
import { newSlot, type Slot } from '../../agent/core/slot.js';
import { makeDiagnostic } from '../../core/diagnostics/index.js';
import { assignmentSchema, serviceSpecSchema, type Observation } from '../../core/model/index.js';

/**
 * The reporter honours a 429's Retry-After (issue #20): it sends nothing until then, and
 * then the newest state of everything (observations are level state, nothing is lost).
 * Pure: the control plane is a recording fake, the clock a number.
 */
const spec = serviceSpecSchema.parse({ name: 'web', image: 'busybox:1.35', command: ['httpd', '-f'] });
const assignment = (replica: string) => assignmentSchema.parse({ replica, service: 'web', node: 'n1', tenure: 7, resources: spec.resources, specRevision: 1, spec, desired: 'run', placedAt: 1 });
const tooFast = (retryAfterMs: number) =>
  new ServerError(429, makeDiagnostic('CCA-E0643', { node: 'n1', cost: 1, ratePerSecond: 1, burst: 1, retryAfterMs, retryAfterSeconds: Math.ceil(retryAfterMs / 1000) }));

function fakeControl(refuse: () => ServerError | undefined) {
  const sent: Observation[][] = [];
  const control = {
    observations: async (_tenure: number, obs: Observation[]) => {
      sent.push(obs);
      const e = refuse();
      if (e) throw e;
    },
    events: async () => undefined,
  } as unknown as ControlPlane;
  return { control, sent };
}

describe('Reporter and Retry-After', () => {
  it('after a 429 it waits as told, then sends the newest observation', async () => {
    let refusals = 1;
    const { control, sent } = fakeControl(() => (refusals-- > 0 ? tooFast(2_000) : undefined));
    const reporter = new Reporter({ node: 'n1', nodeAddress: '', control, reportEveryMs: 10_000, usageEveryMs: 60_000 });
    const a = assignment('web-1');
    const slot: Slot = { ...newSlot('web-1'), assignment: a, state: 'starting' };
    await expect(reporter.report([slot], [a], 7, 1_000, 1_000)).rejects.toThrow(/CCA-E0643/);
    reporter.callFailed();
    slot.state = 'running';
    // Before the server's time: nothing is sent, however often the agent ticks.
    for (const now of [1_100, 2_000, 2_999]) await reporter.report([slot], [a], 7, now, now);
    expect(sent).toHaveLength(1);
    // At its time: the newest state, once.
    await reporter.report([slot], [a], 7, 3_000, 3_000);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.map((o) => o.state)).toEqual(['running']);
  });

  it('a refusal without Retry-After (another 4xx) holds nothing back', async () => {
    let refusals = 1;
    const { control, sent } = fakeControl(() => (refusals-- > 0 ? new ServerError(503, makeDiagnostic('CCA-E0610', { reason: 'down' })) : undefined));
    const reporter = new Reporter({ node: 'n1', nodeAddress: '', control, reportEveryMs: 10_000, usageEveryMs: 60_000 });
    const a = assignment('web-1');
    const slot: Slot = { ...newSlot('web-1'), assignment: a, state: 'running' };
    await expect(reporter.report([slot], [a], 7, 1_000, 1_000)).rejects.toThrow();
    reporter.callFailed();
    await reporter.report([slot], [a], 7, 1_001, 1_001);
    expect(sent).toHaveLength(2);
  });
});
