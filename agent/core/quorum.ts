import { isMajority, QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import type { OutageOracle } from './ports.js';

/**
 * The agent's half of the quorum rule (docs/fencing.md), without I/O: browser-safe, so the
 * simulation runs this very code. The shell asks the peers, checks each answer's signature
 * against the key in the membership copy and hands the verified answers in; this module
 * decides whether they confirm that the control plane is down for a majority, and keeps
 * the confirmation chained from the fence point (OutageLatch).
 */

/** A peer's answer whose signature the shell verified against `node`'s key in the copy. */
export interface VerifiedAnswer {
  node: string;
  /** When this agent sent the question the answer's nonce belongs to (its own clock). */
  askedAt: number;
  reachesControlPlane: boolean;
}

export interface QuorumInput {
  self: string;
  /** The membership copy, and when the request that fetched it was sent. */
  copy: MembershipVersion | undefined;
  copyFetchedAt: number;
  /** When the last successful keepalive was sent (its fence clock's anchor). */
  lastOkSentAt: number;
  /** This agent itself cannot reach the control plane (cannotReach below). */
  selfCannotReach: boolean;
  answers: readonly VerifiedAnswer[];
  now: number;
}

export type QuorumVerdict =
  | { confirmed: true; validUntil: number; votes: number; members: number }
  | {
      confirmed: false;
      why: string;
      votes: number;
      members: number;
      /**
       * A member that reaches the control plane answered, or fewer than a majority answered at
       * all: the next rounds can wait until near the fence point (OutageLatch.roundDue).
       */
      pause?: true;
    };

/**
 * Does a strict majority of the copy's members (this agent included) say, freshly, that they
 * cannot reach the control plane? Any fresh answer from a member that reaches it refutes the
 * outage. Answers from non-members, to old questions (> F), or duplicates count as no answer.
 * A copy fetched more than S before the last successful keepalive proves nothing (the node
 * controller's history may no longer hold it).
 */
export function quorumVerdict(q: QuorumInput): QuorumVerdict {
  const members = q.copy?.members.length ?? 0;
  if (!q.copy || !q.copy.members.some((m) => m.node === q.self)) return { confirmed: false, why: 'this node is not in its membership copy', votes: 0, members };
  if (q.copyFetchedAt < q.lastOkSentAt - QUORUM.copyStaleMs) return { confirmed: false, why: 'the membership copy is too old', votes: 0, members };
  if (!q.selfCannotReach) return { confirmed: false, why: 'this node reaches the control plane', votes: 0, members };
  const inCopy = new Set(q.copy.members.map((m) => m.node));
  // The newest fresh answer per member.
  const latest = new Map<string, VerifiedAnswer>();
  for (const a of q.answers) {
    if (a.node === q.self || !inCopy.has(a.node) || a.askedAt > q.now || q.now - a.askedAt > QUORUM.freshMs) continue;
    const prev = latest.get(a.node);
    if (!prev || a.askedAt > prev.askedAt) latest.set(a.node, a);
  }
  const reaching = [...latest.values()].find((a) => a.reachesControlPlane);
  if (reaching) return { confirmed: false, why: `node ${reaching.node} reaches the control plane`, votes: 0, members, pause: true };
  // Votes: itself (now), then its peers' answers newest first. The confirmation lasts G after
  // the oldest vote it needs: none of those voters counts toward an expiry's majority until G
  // after it came back, which is after its vote (docs/fencing.md).
  const peers = [...latest.values()].sort((a, b) => b.askedAt - a.askedAt);
  const needed = Math.floor(members / 2) + 1;
  const votes = 1 + peers.length;
  if (!isMajority(votes, members)) return { confirmed: false, why: `${votes} of ${members} members confirm the outage, ${needed} needed`, votes, members, pause: true };
  const used = peers.slice(0, needed - 1);
  const oldest = used.length === 0 ? q.now : used[used.length - 1]!.askedAt;
  return { confirmed: true, validUntil: oldest + QUORUM.settleMs, votes, members };
}

/**
 * Does this agent itself count as cut off (and may answer so)? No successful keepalive for Q,
 * and none in flight: a keepalive in flight may be renewing the lease right now.
 */
export function cannotReach(lastOkSentAt: number, keepaliveInFlight: boolean, now: number, cannotReachAfterMs: number): boolean {
  return !keepaliveInFlight && now - lastOkSentAt >= cannotReachAfterMs;
}

/**
 * Keeps workloads running past the fence point only along an unbroken chain of confirmations
 * that began no later than the fence point: a gap (no majority for a moment, or one peer
 * reaching the control plane) fences for good, until a keepalive renews the lease — so an
 * agent whose replicas may already have been replaced never starts them again on peers' word.
 */
export class OutageLatch implements OutageOracle {
  private from = Number.POSITIVE_INFINITY;
  private until = Number.NEGATIVE_INFINITY;
  /** The fence point of the silence in which a round last paused the rounds (roundDue). */
  private refutedBefore: number | undefined;

  /** fenceAt: the fence clock's current fence point (undefined when never registered). */
  constructor(private readonly fenceAt: () => number | undefined) {}

  /** A confirmation formed at `at`, valid until `validUntil`. */
  confirmed(at: number, validUntil: number): void {
    if (validUntil <= at) return;
    // Extends the chain only if it was unbroken up to `at`.
    if (at <= this.until) this.until = Math.max(this.until, validUntil);
    else {
      this.from = at;
      this.until = validUntil;
    }
  }

  confirmsOutage(now: number): boolean {
    const fenceAt = this.fenceAt();
    return fenceAt !== undefined && Number.isFinite(fenceAt) && this.from <= fenceAt && now < this.until;
  }

  /** A restarted agent resumes the chain its previous run left (from the fence point to the deadline it wrote). */
  resume(from: number, until: number): void {
    this.confirmed(from, until);
  }

  /**
   * Whether a peer round is worth its questions now: always, unless a confirmed chain still has
   * more than QUORUM.reaskLeadMs to run. Skipping one never lets workloads run longer (only a
   * confirmation extends the chain); the lead leaves room for several rounds, each ≤ A, before
   * the chain ends, and a stalled agent's supervisors at least that long before its deadline.
   */
  roundDue(now: number): boolean {
    if (this.confirmsOutage(now)) return this.until - now <= QUORUM.reaskLeadMs;
    // Refuted, or too few answers, in this silence (the fence point has not moved since): in a
    // whole-cluster outage every member is silent for Q by the fence point − P − A (quorumFits)
    // and answers within A, so ask again from QUORUM.pauseLeadMs before it, every P.
    const fenceAt = this.fenceAt();
    // Past the fence point with no chain, no confirmation can count (a chain must begin by
    // it): nothing to ask until a keepalive moves the fence point. Fenced agents asked every
    // member every P for as long as they were cut off.
    if (fenceAt !== undefined && now >= fenceAt) return false;
    return !(fenceAt !== undefined && this.refutedBefore === fenceAt && now < fenceAt - QUORUM.pauseLeadMs);
  }

  /**
   * Whether a round should first ask QUORUM.probeMembers members only: before pauseLeadMs
   * ahead of the fence point, with no chain to extend. No round there is needed to confirm in
   * time (roundDue), so the probe's extra A costs nothing that matters; from that point on,
   * and to extend a chain, every round asks every member at once, as always.
   */
  probeFirst(now: number): boolean {
    const fenceAt = this.fenceAt();
    return !this.confirmsOutage(now) && fenceAt !== undefined && now < fenceAt - QUORUM.pauseLeadMs;
  }

  /** A round's verdict: one that pauses (refuted, or too few answers) holds the rounds back (roundDue). */
  judged(v: QuorumVerdict, now: number): void {
    if (v.confirmed) this.confirmed(now, v.validUntil);
    else if (v.pause) this.refutedBefore = this.fenceAt();
  }

  /** Until when the workloads may run (for the supervisors' fence file), or undefined. */
  runsUntil(now: number): number | undefined {
    return this.confirmsOutage(now) ? this.until : undefined;
  }
}
