import { randomInt } from 'node:crypto';
import type { Cidr } from '../../core/model/peer-address.js';
import { cannotReachAfterMs, QUORUM, type Member, type MembershipVersion } from '../../core/model/quorum.js';
import { cannotReach, OutageLatch, quorumVerdict, type QuorumVerdict, type VerifiedAnswer } from '../core/quorum.js';
import type { OutageOracle } from '../core/ports.js';
import { askMembers } from './client.js';
import type { PeerKeys } from './keys.js';

export interface PeerQuorumDeps {
  self: string;
  keys: PeerKeys;
  now: () => number;
  /** The fence clock: its fence point, and when the last successful keepalive was sent (undefined: never). */
  fenceAt: () => number | undefined;
  lastOkSentAt: () => number | undefined;
  /** The keepalive in flight, if any: settles (either way) within D. */
  keepaliveSettled: () => Promise<unknown> | undefined;
  ttlMs: () => number;
  /** The membership copy and when the request that fetched it was sent. */
  membership: () => { copy: MembershipVersion; fetchedAt: number } | undefined;
  log: (line: string) => void;
  /** Peer networks (--peer-networks): which member addresses may be dialled. */
  networks: readonly Cidr[];
  fetch?: typeof fetch;
}

/**
 * The agent shell's half of the quorum rule: while this agent cannot reach the control
 * plane it asks its peers every QUORUM.pollMs (once confirmed, only as the chain nears its
 * end: OutageLatch.roundDue) and feeds each confirmation to the latch the
 * core consults (`fenced = due && !confirmsOutage`). Also what its own peer endpoint
 * answers (reaches). docs/fencing.md.
 */
export class PeerQuorum implements OutageOracle {
  readonly latch: OutageLatch;
  /** Questions sent to peers so far (one per member asked per round): what this agent's outages cost the others. */
  questions = 0;
  private lastWhy = '';
  private readonly refusedLogged = new Set<string>();

  constructor(private readonly d: PeerQuorumDeps) {
    this.latch = new OutageLatch(d.fenceAt);
  }

  confirmsOutage(now: number): boolean {
    return this.latch.confirmsOutage(now);
  }

  /**
   * What this agent's peer endpoint answers: with a keepalive in flight it waits for it to
   * settle (≤ D) and answers from the outcome — in flight it might be renewing the lease.
   */
  async reaches(): Promise<boolean> {
    const pending = this.d.keepaliveSettled();
    if (pending) await pending.then(() => undefined, () => undefined);
    const last = this.d.lastOkSentAt();
    return last === undefined ? false : !cannotReach(last, this.d.keepaliveSettled() !== undefined, this.d.now(), cannotReachAfterMs(this.d.ttlMs()));
  }

  /** One round: ask if cut off and the chain needs it (OutageLatch.roundDue), judge, extend the latch. Returns the verdict (undefined: no round). */
  async round(): Promise<QuorumVerdict | undefined> {
    const last = this.d.lastOkSentAt();
    if (last === undefined || !this.latch.roundDue(this.d.now()) || (await this.reaches())) return undefined;
    const m = this.d.membership();
    const opts = { self: this.d.self, keys: this.d.keys, now: this.d.now, networks: this.d.networks, refused: (member: Member, problem: string) => this.refused(member.node, problem), ...(this.d.fetch ? { fetch: this.d.fetch } : {}) };
    const others = m ? m.copy.members.filter((x) => x.node !== this.d.self) : [];
    let answers: VerifiedAnswer[] = [];
    if (m && others.length > QUORUM.probeMembers && this.latch.probeFirst(this.d.now())) {
      // A few members first (OutageLatch.probeFirst): one that reaches the control plane settles the round.
      const probe = pick(others, QUORUM.probeMembers);
      this.questions += probe.length;
      answers = await askMembers({ ...m.copy, members: probe }, opts);
    }
    if (m && !answers.some((a) => a.reachesControlPlane)) {
      this.questions += others.length;
      answers = await askMembers(m.copy, opts);
    }
    const selfCannotReach = !(await this.reaches());
    const now = this.d.now();
    const v = quorumVerdict({ self: this.d.self, copy: m?.copy, copyFetchedAt: m?.fetchedAt ?? 0, lastOkSentAt: this.d.lastOkSentAt() ?? last, selfCannotReach, answers, now });
    this.latch.judged(v, now);
    const why = v.confirmed ? `outage confirmed by ${v.votes} of ${v.members} members` : v.why;
    if (why !== this.lastWhy) this.d.log(`control plane unreachable: ${why}`);
    this.lastWhy = why;
    return v;
  }

  private refused(node: string, problem: string): void {
    if (this.refusedLogged.has(`${node} ${problem}`)) return;
    this.refusedLogged.add(`${node} ${problem}`);
    this.d.log(`not asking node ${node}: its peer address is refused: ${problem} (CCA-E0581)`);
  }

  /** Rounds every QUORUM.pollMs until closed; `changed` after each (the fence file, a reconcile). */
  async loop(isClosed: () => boolean, sleep: (ms: number) => Promise<void>, changed: () => void): Promise<void> {
    while (!isClosed()) {
      try {
        if (await this.round()) changed();
      } catch (e) {
        this.d.log(`peer round failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      await sleep(QUORUM.pollMs);
    }
  }
}

/** `n` of `all`, at random (a partial Fisher–Yates shuffle of a copy). */
function pick<T>(all: readonly T[], n: number): T[] {
  const a = [...all];
  for (let i = 0; i < n && i < a.length - 1; i++) {
    const j = i + randomInt(a.length - i);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, n);
}
