import { cannotReachAfterMs, QUORUM, type MembershipVersion } from '../../core/model/quorum.js';
import { cannotReach, OutageLatch, quorumVerdict, type QuorumVerdict, type VerifiedAnswer } from '../../agent/core/quorum.js';

/** What the simulation knows of one agent for the quorum rule (read from its core). */
export interface SimPeer {
  node: string;
  lastOkSentAt(): number | undefined;
  keepaliveInFlight(): boolean;
  ttlMs(): number;
  membership(): { copy: MembershipVersion; fetchedAt: number } | undefined;
  readonly latch: OutageLatch;
}

/**
 * The peer network of the simulation: agents ask each other through it, and it answers
 * with what each asked agent would say — the real decision (agent/core/quorum.ts) on both
 * ends. Signatures are the real endpoint's business (agent/peer/); here an answer arrives
 * only between nodes the world's partitions let talk, instantly, at the asker's time.
 */
export class SimPeerNet {
  /** Questions asked so far (one per member asked per round): what a long outage costs the peers. */
  questions = 0;

  constructor(private readonly canTalk: (from: string, to: string) => boolean) {}

  /** What `p` answers: it reaches the control plane unless silent for Q with nothing in flight. */
  reaches(p: SimPeer, now: number): boolean {
    const last = p.lastOkSentAt();
    return last !== undefined && !cannotReach(last, p.keepaliveInFlight(), now, cannotReachAfterMs(p.ttlMs()));
  }

  /** One round for `asker` (the real agent's every P, paced by its latch as the real one's): ask the reachable members, judge, feed its latch. */
  round(asker: SimPeer, peers: ReadonlyMap<string, SimPeer>, now: number): QuorumVerdict | undefined {
    const last = asker.lastOkSentAt();
    if (last === undefined || !asker.latch.roundDue(now) || this.reaches(asker, now)) return undefined;
    const m = asker.membership();
    const others = (m?.copy.members ?? []).filter((member) => member.node !== asker.node);
    const ask = (members: typeof others): VerifiedAnswer[] => {
      const answers: VerifiedAnswer[] = [];
      for (const member of members) {
        const peer = peers.get(member.node);
        if (!peer || !this.canTalk(asker.node, peer.node) || !this.canTalk(peer.node, asker.node)) continue;
        this.questions++;
        answers.push({ node: peer.node, askedAt: now, reachesControlPlane: this.reaches(peer, now) });
      }
      return answers;
    };
    // As the real agent's (agent/peer/outage.ts): a few members first, the rest only if none reaches. The first few in
    // membership order: the simulation's choices stay reproducible.
    let answers = others.length > QUORUM.probeMembers && asker.latch.probeFirst(now) ? ask(others.slice(0, QUORUM.probeMembers)) : [];
    if (!answers.some((a) => a.reachesControlPlane)) answers = ask(others);
    const v = quorumVerdict({ self: asker.node, copy: m?.copy, copyFetchedAt: m?.fetchedAt ?? 0, lastOkSentAt: last, selfCannotReach: true, answers, now });
    asker.latch.judged(v, now);
    return v;
  }
}

export const SIM_PEER_POLL_MS = QUORUM.pollMs;
