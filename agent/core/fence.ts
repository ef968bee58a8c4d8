/**
 * Fencing: the agent stops its own workloads a margin before its lease could expire, timed
 * from the moment it *sent* its last keepalive that succeeded (the server refreshed the lease
 * no earlier than that, so the lease cannot expire before sentAt + ttl). docs/agent.md
 * explains the numbers; test/agent/fence.test.ts checks them.
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
 * `due(now)` is true once fencing must begin. A server that answers "store unavailable" also
 * renews it: a lease cannot expire while the store is down, and when the store returns the
 * next keepalive either succeeds or tells us the lease is gone (then we stop at once).
 */
export class FenceClock {
  private lastOkSentAt: number | undefined;

  constructor(private ttlSeconds: number) {}

  renewed(sentAt: number, ttlSeconds = this.ttlSeconds): void {
    this.ttlSeconds = ttlSeconds;
    if (this.lastOkSentAt === undefined || sentAt > this.lastOkSentAt) this.lastOkSentAt = sentAt;
  }

  /** The lease is known to be gone: fence now. */
  lost(): void {
    this.lastOkSentAt = Number.NEGATIVE_INFINITY;
  }

  fenceAt(): number | undefined {
    return this.lastOkSentAt === undefined ? undefined : deadlines(this.lastOkSentAt, this.ttlSeconds).fenceAt;
  }

  due(now: number): boolean {
    const at = this.fenceAt();
    return at !== undefined && now >= at;
  }

  sinceRenewal(now: number): number {
    return this.lastOkSentAt === undefined || !Number.isFinite(this.lastOkSentAt) ? Number.POSITIVE_INFINITY : now - this.lastOkSentAt;
  }
}
