/**
 * Fencing: the agent stops its own workloads a margin before its lease could expire, timed
 * from the moment it *sent* its last keepalive that succeeded (the server refreshed the lease
 * no earlier than that, so the lease cannot expire before sentAt + ttl). docs/agent.md
 * explains the numbers; test/agent/agent-fake.test.ts checks them (and test/core/stale-docs.test.ts
 * that docs/agent.md and docs/controllers.md state these values).
 */
export const FENCE = {
  /** Fencing starts this long before the earliest moment the lease could expire. */
  marginMs: 3_000,
  /** During a fence, a workload gets at most this much grace before SIGKILL. */
  killMs: 2_000,
  /** How often the fence deadline is checked (by the agent, and by each supervisor). */
  checkMs: 200,
  /** Keepalives are sent every ttl / keepalivesPerTtl. */
  keepalivesPerTtl: 4,
  /** After a failed keepalive the next one is tried this soon. */
  keepaliveRetryMs: 500,
  /** The smallest lease TTL the agent accepts: the margin plus two seconds of slack. */
  minTtlSeconds: 5,
} as const;

/** When the workloads must all be dead: the margin minus the kill budget, before the earliest expiry. */
export function deadlines(lastOkSentAt: number, ttlSeconds: number): { fenceAt: number; deadAt: number; earliestExpiry: number } {
  const earliestExpiry = lastOkSentAt + ttlSeconds * 1000;
  const fenceAt = earliestExpiry - FENCE.marginMs;
  return { fenceAt, deadAt: fenceAt + FENCE.killMs + FENCE.checkMs, earliestExpiry };
}

/**
 * The fence clock. Renewed by each successful keepalive (with the time the request was sent);
 * `due(now)` is true once fencing must begin. A server that answers "store unavailable" moves
 * the deadline by the span over which it said so (first such answer to the latest), never
 * by more: the store's lease clock stands still while it is down (leases keep the time they
 * had left), but the agent cannot know how little time its lease had left when the outage
 * began. Renewing the whole TTL on such an answer (the rule before) let a node partitioned
 * once the store returned outlive its lease: the simulation, running this code, found a
 * replacement started while the old copy still ran.
 */
export class FenceClock {
  private lastOkSentAt: number | undefined;
  /** First and latest "store down" answers since the last renewal. */
  private downFirst: number | undefined;
  private downLast: number | undefined;

  constructor(private ttlSeconds: number) {}

  renewed(sentAt: number, ttlSeconds = this.ttlSeconds): void {
    this.ttlSeconds = ttlSeconds;
    if (this.lastOkSentAt === undefined || sentAt > this.lastOkSentAt) {
      this.lastOkSentAt = sentAt;
      this.downFirst = undefined;
      this.downLast = undefined;
    }
  }

  /** The server answered, at `sentAt`, that its store is down: the lease cannot expire meanwhile. */
  storeDown(sentAt: number): void {
    if (this.lastOkSentAt === undefined || !Number.isFinite(this.lastOkSentAt) || sentAt <= this.lastOkSentAt) return;
    this.downFirst ??= sentAt;
    this.downLast = Math.max(this.downLast ?? sentAt, sentAt);
  }

  /** The lease is known to be gone: fence now. */
  lost(): void {
    this.lastOkSentAt = Number.NEGATIVE_INFINITY;
    this.downFirst = undefined;
    this.downLast = undefined;
  }

  fenceAt(): number | undefined {
    if (this.lastOkSentAt === undefined) return undefined;
    const seenDown = this.downFirst === undefined || this.downLast === undefined ? 0 : this.downLast - this.downFirst;
    return deadlines(this.lastOkSentAt, this.ttlSeconds).fenceAt + seenDown;
  }

  due(now: number): boolean {
    const at = this.fenceAt();
    return at !== undefined && now >= at;
  }

  sinceRenewal(now: number): number {
    return this.lastOkSentAt === undefined || !Number.isFinite(this.lastOkSentAt) ? Number.POSITIVE_INFINITY : now - this.lastOkSentAt;
  }
}
