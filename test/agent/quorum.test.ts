import { describe, expect, it } from 'vitest';
import { cannotReach, OutageLatch, quorumVerdict, type QuorumInput } from '../../agent/core/quorum.js';
import { QUORUM, type MembershipVersion } from '../../core/model/quorum.js';

const members = (...names: string[]): MembershipVersion => ({ version: 3, since: 0, members: names.map((node) => ({ node, ttlSeconds: 30 })) });
const base = (over: Partial<QuorumInput> = {}): QuorumInput => ({
  self: 'a',
  copy: members('a', 'b', 'c', 'd', 'e'),
  copyFetchedAt: 9_000,
  lastOkSentAt: 10_000,
  selfCannotReach: true,
  answers: [],
  now: 30_000,
  ...over,
});
const no = (node: string, askedAt = 29_500) => ({ node, askedAt, reachesControlPlane: false });

describe('quorum verdict (agent side)', () => {
  it('confirms only with a strict majority of all members, itself included', () => {
    expect(quorumVerdict(base({ answers: [no('b')] }))).toMatchObject({ confirmed: false, votes: 2, members: 5 });
    expect(quorumVerdict(base({ answers: [no('b'), no('c')] }))).toMatchObject({ confirmed: true, votes: 3 });
    // Four members: two is not a majority.
    expect(quorumVerdict(base({ copy: members('a', 'b', 'c', 'd'), answers: [no('b')] }))).toMatchObject({ confirmed: false });
  });

  it('a single-node cluster confirms its own outage', () => {
    expect(quorumVerdict(base({ copy: members('a') }))).toMatchObject({ confirmed: true, validUntil: 30_000 + QUORUM.settleMs });
  });

  it('one peer that reaches the control plane refutes the outage', () => {
    expect(quorumVerdict(base({ answers: [no('b'), no('c'), no('d'), { node: 'e', askedAt: 29_000, reachesControlPlane: true }] }))).toMatchObject({ confirmed: false, why: 'node e reaches the control plane' });
  });

  it('stale, unknown, duplicate and self answers count as no answer', () => {
    const stale = 30_000 - QUORUM.freshMs - 1;
    expect(quorumVerdict(base({ answers: [no('b', stale), no('c')] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ answers: [no('x'), no('c')] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ answers: [no('c', 29_000), no('c', 29_900)] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ answers: [no('a'), no('c')] })).confirmed).toBe(false);
    // A question from the future (a clock that jumped) proves nothing either.
    expect(quorumVerdict(base({ answers: [no('b', 31_000), no('c')] })).confirmed).toBe(false);
  });

  it('lasts G after the oldest answer it needs (its voters settle no sooner: docs/fencing.md)', () => {
    const v = quorumVerdict(base({ answers: [no('b', 28_000), no('c', 29_000), no('d', 29_900)] }));
    expect(v).toMatchObject({ confirmed: true, validUntil: 29_000 + QUORUM.settleMs });
  });

  it('refuses without itself cut off, outside its copy, or with a copy older than S', () => {
    expect(quorumVerdict(base({ selfCannotReach: false, answers: [no('b'), no('c')] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ self: 'z', answers: [no('b'), no('c')] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ copy: undefined })).confirmed).toBe(false);
    expect(quorumVerdict(base({ copyFetchedAt: 10_000 - QUORUM.copyStaleMs - 1, answers: [no('b'), no('c')] })).confirmed).toBe(false);
    expect(quorumVerdict(base({ copyFetchedAt: 10_000 - QUORUM.copyStaleMs, answers: [no('b'), no('c')] })).confirmed).toBe(true);
  });

  it('an agent cannot reach only after Q without a success and with nothing in flight', () => {
    expect(cannotReach(0, false, 999, 1_000)).toBe(false);
    expect(cannotReach(0, false, 1_000, 1_000)).toBe(true);
    expect(cannotReach(0, true, 5_000, 1_000)).toBe(false);
  });
});

describe('outage latch', () => {
  it('runs past the fence point only along a chain that began by it', () => {
    let fenceAt = 10_000;
    const latch = new OutageLatch(() => fenceAt);
    expect(latch.confirmsOutage(11_000)).toBe(false);
    latch.confirmed(9_000, 11_000);
    latch.confirmed(10_500, 13_000);
    expect(latch.confirmsOutage(12_900)).toBe(true);
    expect(latch.runsUntil(12_900)).toBe(13_000);
    expect(latch.confirmsOutage(13_000)).toBe(false);
    // A gap fences for good: a later confirmation starts a chain after the fence point.
    latch.confirmed(13_500, 16_000);
    expect(latch.confirmsOutage(14_000)).toBe(false);
    // A renewal moves the fence point; the next outage needs a chain of its own.
    fenceAt = 40_000;
    expect(latch.confirmsOutage(41_000)).toBe(false);
  });

  it('a round refuted, or answered by too few, pauses the rounds until pauseLeadMs before this silence\'s fence point', () => {
    let fenceAt = 40_000;
    const latch = new OutageLatch(() => fenceAt);
    const due = (now: number) => latch.roundDue(now);
    expect(due(25_000)).toBe(true);
    // A verdict that says nothing of the members (this node reached the control plane after all): every P.
    latch.judged(quorumVerdict(base({ now: 25_000, selfCannotReach: false })), 25_000);
    expect(due(26_000)).toBe(true);
    // A member reaches the control plane: nothing until 2 × (P + A) before the fence point.
    const refuted = quorumVerdict(base({ now: 26_000, answers: [{ node: 'b', askedAt: 25_900, reachesControlPlane: true }] }));
    expect(refuted).toMatchObject({ confirmed: false, pause: true });
    latch.judged(refuted, 26_000);
    expect(QUORUM.pauseLeadMs).toBe(2 * (QUORUM.pollMs + QUORUM.askTimeoutMs));
    expect(due(27_000)).toBe(false);
    expect(due(fenceAt - QUORUM.pauseLeadMs - 1)).toBe(false);
    expect(due(fenceAt - QUORUM.pauseLeadMs)).toBe(true);
    // A keepalive moved the fence point: a new silence, asked from Q as before.
    fenceAt = 70_000;
    expect(due(56_000)).toBe(true);
    // Too few answers (2 of 5 votes, 3 needed): the same pause.
    const few = quorumVerdict(base({ now: 56_000, answers: [no('b', 55_800)] }));
    expect(few).toMatchObject({ confirmed: false, votes: 2, pause: true });
    latch.judged(few, 56_000);
    expect(due(57_000)).toBe(false);
    expect(due(fenceAt - QUORUM.pauseLeadMs)).toBe(true);
    // A confirmation paces by the chain's end, whatever came before.
    latch.judged({ confirmed: true, validUntil: 86_000, votes: 3, members: 5 }, 66_000);
    expect(due(67_000)).toBe(false);
    expect(due(86_000 - QUORUM.reaskLeadMs)).toBe(true);
  });

  it('past the fence point without a chain, no round is due: nothing it could confirm would count', () => {
    let fenceAt = 40_000;
    const latch = new OutageLatch(() => fenceAt);
    expect(latch.roundDue(39_999)).toBe(true);
    expect(latch.roundDue(40_000)).toBe(false);
    expect(latch.roundDue(400_000)).toBe(false);
    // A confirmation after the fence point would not have counted either.
    latch.judged({ confirmed: true, validUntil: 60_000, votes: 3, members: 5 }, 40_001);
    expect(latch.confirmsOutage(40_002)).toBe(false);
    // A chain that began by the fence point keeps its rounds past it.
    const chained = new OutageLatch(() => fenceAt);
    chained.judged({ confirmed: true, validUntil: 55_000, votes: 3, members: 5 }, 39_000);
    expect(chained.roundDue(46_000)).toBe(true);
    // A keepalive moved the fence point: asked again.
    fenceAt = 80_000;
    expect(latch.roundDue(60_000)).toBe(true);
  });

  it('a round probes a few members first only before pauseLeadMs ahead of the fence point, with no chain to extend', () => {
    const latch = new OutageLatch(() => 40_000);
    expect(latch.probeFirst(20_000)).toBe(true);
    expect(latch.probeFirst(40_000 - QUORUM.pauseLeadMs - 1)).toBe(true);
    expect(latch.probeFirst(40_000 - QUORUM.pauseLeadMs)).toBe(false);
    latch.judged({ confirmed: true, validUntil: 60_000, votes: 3, members: 5 }, 30_000);
    expect(latch.probeFirst(31_000)).toBe(false);
    expect(new OutageLatch(() => undefined).probeFirst(0)).toBe(false);
  });

  it('a chain that starts after the fence point does not count', () => {
    const latch = new OutageLatch(() => 10_000);
    latch.confirmed(10_001, 20_000);
    expect(latch.confirmsOutage(12_000)).toBe(false);
    const never = new OutageLatch(() => undefined);
    never.confirmed(0, 20_000);
    expect(never.confirmsOutage(1)).toBe(false);
  });
});
