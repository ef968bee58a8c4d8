import { randomBytes } from 'node:crypto';
import { peerAddressProblem, type Cidr } from '../../core/model/peer-address.js';
import { QUORUM, type Member, type MembershipVersion } from '../../core/model/quorum.js';
import type { VerifiedAnswer } from '../core/quorum.js';
import type { PeerKeys } from './keys.js';
import { verifySignature } from './keys.js';
import { answerSchema, answerText, PEER_PATH, questionText } from './protocol.js';

export interface AskOptions {
  self: string;
  keys: PeerKeys;
  now: () => number;
  /** Peer networks (--peer-networks): an address outside them and not the member's registration source is never dialled. */
  networks: readonly Cidr[];
  /** A member's address refused by that check (the quorum logs it once). */
  refused?: (member: Member, problem: string) => void;
  fetch?: typeof fetch;
}

/**
 * Ask one member; its verified answer, or undefined for anything else (no address, no answer
 * within QUORUM.askTimeoutMs, a refusal, a body too large, a bad signature, a wrong nonce or
 * node): the quorum counts that as no answer.
 */
export async function askPeer(member: Member, o: AskOptions, signal: AbortSignal = AbortSignal.timeout(QUORUM.askTimeoutMs)): Promise<VerifiedAnswer | undefined> {
  const peer = member.peer;
  if (!peer || peer.address === '' || member.node === o.self) return undefined;
  // The same check the server made at registration (core/model/peer-address.ts): never dial a foreign address.
  const problem = peerAddressProblem(peer.address, { networks: o.networks, registeredFrom: peer.from });
  if (problem !== undefined) {
    o.refused?.(member, problem);
    return undefined;
  }
  const nonce = randomBytes(16).toString('base64url');
  const askedAt = o.now();
  const question = { from: o.self, to: member.node, nonce };
  try {
    const r = await (o.fetch ?? fetch)(`http://${peer.address}${PEER_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...question, signature: o.keys.sign(questionText(question)) }),
      signal,
    });
    if (r.status !== 200 || Number(r.headers.get('content-length') ?? 0) > QUORUM.maxBodyBytes) {
      await r.body?.cancel();
      return undefined;
    }
    const text = await r.text();
    if (text.length > QUORUM.maxBodyBytes) return undefined;
    const a = answerSchema.safeParse(JSON.parse(text));
    if (!a.success || a.data.node !== member.node || a.data.to !== o.self || a.data.nonce !== nonce) return undefined;
    const { signature, ...unsigned } = a.data;
    if (!verifySignature(peer.publicKey, answerText(unsigned), signature)) return undefined;
    return { node: member.node, askedAt, reachesControlPlane: a.data.reachesControlPlane };
  } catch {
    return undefined;
  }
}

/**
 * Ask every other member at once (a round's answers must be fresh together: F), each question
 * bounded by A. The first verified answer that reaches the control plane refutes the outage
 * (quorumVerdict), so the questions still out are abandoned then: nothing they say can change
 * the verdict, and at a few hundred members each is a signature to check.
 */
export async function askMembers(copy: MembershipVersion, o: AskOptions): Promise<VerifiedAnswer[]> {
  const round = new AbortController();
  const timer = setTimeout(() => round.abort(), QUORUM.askTimeoutMs);
  try {
    const answers = await Promise.all(
      copy.members
        .filter((m) => m.node !== o.self)
        .map(async (m) => {
          const a = round.signal.aborted ? undefined : await askPeer(m, o, round.signal);
          if (a?.reachesControlPlane) round.abort();
          return a;
        }),
    );
    return answers.filter((a): a is VerifiedAnswer => a !== undefined);
  } finally {
    clearTimeout(timer);
  }
}
