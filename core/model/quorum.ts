import { z } from 'zod';

/**
 * The quorum rule's shared half (DESIGN rules 7 and 8, docs/fencing.md): the membership both
 * the node controller and the agents count, and every timing constant the safety argument
 * uses. One module, so the controller, the agent, the simulation and docs/fencing.md (checked
 * by test/core/quorum.test.ts) can never disagree on a number.
 *
 * Notation of docs/fencing.md: T is a node's lease TTL; all values here are milliseconds.
 */
export const QUORUM = {
  /** D: a keepalive the agent has not heard back from within this is a failure (agent/client.ts). */
  keepaliveTimeoutMs: 1_000,
  /** g: leaseTimeToLive answers in whole seconds; every silence the controller reads is widened by this much on the unsafe side. */
  granularityMs: 1_000,
  /** A: a question to a peer gets this long for its answer (≥ D: a peer with a keepalive in flight answers once it settles). */
  askTimeoutMs: 1_500,
  /** P: an agent whose keepalives fail asks its peers this often — until a majority confirms the outage. */
  pollMs: 1_000,
  /**
   * Once confirmed, an agent asks again only when its chain has less than this left (G/2),
   * then every P: each round asks every member, so asking every P through a long outage cost
   * n − 1 questions a second per node for nothing (the chain ends no later for it).
   */
  reaskLeadMs: 10_000,
  /**
   * After a round a member refuted (it reaches the control plane) or fewer than a majority
   * answered, an agent asks again only when its fence point is this close (2 × (P + A)): in a
   * whole-cluster outage every member is silent for Q by the fence point − P − A (quorumFits)
   * and answers within A. A slow control plane made every slow agent ask every member every P
   * (n − 1 questions each, n² across the cluster), which slowed the agents further
   * (docs/fencing.md).
   */
  pauseLeadMs: 5_000,
  /**
   * A round before that point first asks this many members, picked at random, and asks the
   * rest only if none of them reaches the control plane: a slow agent's first round was n − 1
   * questions, and many slow agents at once starved a load process of bench:system.
   */
  probeMembers: 3,
  /** F: an answer counts for this long after its question was sent (F > P + A, so confirmations can chain without a gap). */
  freshMs: 3_000,
  /** S: an agent confirms an outage only with a membership copy fetched by a request sent at most this long before its last successful keepalive. */
  copyStaleMs: 65_000,
  /** Added to the membership history window for clock differences between pods and agents. */
  historyMarginMs: 10_000,
  /**
   * G: a member's renewals count toward the majority that lets the node controller expire a
   * node only once they have gone on this long (plus the clock margin) since the server last
   * saw it register or come back from a silence of R or more (`renewingSince` in its record);
   * and an agent's confirmation of an outage lasts this long after the oldest question it
   * relies on. So a late renewer has G to come back after the control plane returns, and a
   * starved agent's peer rounds may take up to G (docs/fencing.md).
   */
  settleMs: 20_000,
  /** L: after the node controller expires a node, its replicas are declared lost no sooner than this (≥ check + kill budget, with room; see docs/fencing.md). */
  lostGraceMs: 6_000,
  /**
   * The store lease under an API-registered node record (s): a backstop only — the node
   * controller expires nodes by the quorum rule. A control plane away longer than this finds
   * every such lease expired when it returns.
   */
  backstopSeconds: 86_400,
  /** The peer endpoint's bounds. */
  maxBodyBytes: 2_048,
  maxConcurrentQuestions: 32,
  /** The default lease TTL of an agent (s): the smallest round number the quorum rule fits (quorumFits). */
  defaultTtlSeconds: 30,
} as const;

/** K: a healthy agent sends a keepalive every T / 4 (agent/core/fence.ts FENCE.keepalivesPerTtl). */
export function keepaliveEveryMs(ttlMs: number): number {
  return ttlMs / 4;
}

/** R: the node controller counts a member as renewing when its last renewal is at most this old (K + D + 2g: a healthy agent always is). */
export function renewingWithinMs(ttlMs: number): number {
  return keepaliveEveryMs(ttlMs) + QUORUM.keepaliveTimeoutMs + 2 * QUORUM.granularityMs;
}

/** Q: an agent answers "I cannot reach the control plane" only after this long without a successful keepalive (Q > R + D + F). */
export function cannotReachAfterMs(ttlMs: number): number {
  return renewingWithinMs(ttlMs) + QUORUM.keepaliveTimeoutMs + QUORUM.freshMs + 500;
}

/**
 * Whether peers can confirm a whole-cluster outage before an agent's fence point: the last
 * successful keepalive may be K + D before the outage began, the peers' answers come Q + P + A
 * after it. Below this TTL the agent fences as it always did (no confirmation arrives in time).
 */
export function quorumFits(ttlMs: number, fenceMarginMs: number): boolean {
  return cannotReachAfterMs(ttlMs) + QUORUM.pollMs + QUORUM.askTimeoutMs <= ttlMs - fenceMarginMs - keepaliveEveryMs(ttlMs) - QUORUM.keepaliveTimeoutMs;
}

/**
 * Did the lease of a node whose keepalive the server is about to apply stay silent for R or
 * more (elapsed: what the store's leaseTimeToLive shows, in whole seconds, widened by g)? Then
 * the server stamps `renewingSince` before renewing: the node's renewals count for expiries
 * only G after it (settledFrom). Called by the agent keepalive route and the simulation's
 * (and, for a registration under the same lease, through stampOnResume).
 */
export function backFromSilence(elapsedMs: number, ttlMs: number): boolean {
  return elapsedMs + QUORUM.granularityMs >= renewingWithinMs(ttlMs);
}

/**
 * The `renewingSince` a registration under the node's current lease writes (an agent restarted
 * within its lease, one publishing a node condition): a new stamp (`now`) only if the lease was
 * silent for R or more, as at a keepalive (`elapsedMs` undefined: the lease is gone), or the
 * record had none; the record's own otherwise. A new lease always gets `now`. Called by the
 * agent register route and the simulation's. docs/fencing.md.
 */
export function stampOnResume(previous: number | undefined, elapsedMs: number | undefined, ttlMs: number, now: number): number {
  return previous === undefined || elapsedMs === undefined || backFromSilence(elapsedMs, ttlMs) ? now : previous;
}

/** When the renewals of a node stamped `renewingSince` (server clock) start counting for expiries (controller clock). */
export function settledFrom(renewingSince: number): number {
  return renewingSince + QUORUM.settleMs + QUORUM.historyMarginMs;
}

/** W: how long a superseded membership version keeps counting for expiries (≥ T + S + margin). */
export function historyWindowMs(maxTtlMs: number): number {
  return maxTtlMs + QUORUM.copyStaleMs + QUORUM.historyMarginMs;
}

/** Strict majority: more than half of the members. An empty membership has no one to protect. */
export function isMajority(count: number, members: number): boolean {
  return members === 0 || count * 2 > members;
}

/** What an agent publishes for its peers in its `/nodes/<node>` record. */
export const peerInfoSchema = z.object({
  /** host:port of the agent's peer endpoint ('' when it has none). */
  address: z.string().max(255),
  /** Ed25519 public key, raw 32 bytes, base64. */
  publicKey: z.string().max(64),
  /** Set by the server: the address the node registered from; peers dial `address` only if it is this host or in their peer networks (core/model/peer-address.ts). */
  from: z.string().max(64).optional(),
});

export const memberSchema = z.object({
  node: z.string(),
  /** Lease TTL of the member (s), for the history window. */
  ttlSeconds: z.int().min(1),
  peer: peerInfoSchema.optional(),
});

export const membershipVersionSchema = z.object({
  version: z.int().min(1),
  /** Controller time at which this version took effect. */
  since: z.int().min(0),
  members: z.array(memberSchema),
});

/**
 * `/membership`: the node controller's history of membership versions (newest last), each
 * kept until W after its successor took effect, and the hold state.
 */
export const membershipSchema = z.object({
  versions: z.array(membershipVersionSchema).min(1),
  /** Set while a majority is silent: nothing is expired. */
  heldSince: z.int().min(0).optional(),
  /** When the last hold lifted: held nodes get a full lease from here before they may expire. */
  liftedAt: z.int().min(0).optional(),
});

/** What an agent gets with its assignments: the current version, enough to ask and check its peers. */
export const membershipCopySchema = membershipVersionSchema;

export type PeerInfo = z.output<typeof peerInfoSchema>;
export type Member = z.output<typeof memberSchema>;
export type MembershipVersion = z.output<typeof membershipVersionSchema>;
export type Membership = z.output<typeof membershipSchema>;
