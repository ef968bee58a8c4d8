/**
 * A token bucket as plain arithmetic: the caller passes the time, so the same policy runs
 * in a server pod, in a test with a fake clock and in the simulation.
 *
 * A request costs as many tokens as keys it writes. It is admitted while the bucket holds
 * any token at all, and may then drive it into debt: a request larger than the whole burst
 * still goes through once the bucket is full (no report is too big ever to be written), and
 * the debt is paid back before the next one. The long-run rate is `ratePerSecond` either way.
 */
export interface BucketPolicy {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** The most tokens the bucket holds (the largest burst admitted after a quiet spell). */
  burst: number;
}

export interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, the caller's clock). */
  at: number;
}

export type Admission = { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterMs: number };

export function fullBucket(policy: BucketPolicy, now: number): Bucket {
  return { tokens: policy.burst, at: now };
}

/** The bucket refilled up to `now` (a clock that went back refills nothing). */
export function refill(policy: BucketPolicy, b: Bucket, now: number): Bucket {
  const elapsed = Math.max(0, now - b.at);
  return { tokens: Math.min(policy.burst, b.tokens + (elapsed * policy.ratePerSecond) / 1000), at: Math.max(now, b.at) };
}

/** Admit a request of `cost` tokens at `now`, or say how long until one would be. */
export function take(policy: BucketPolicy, b: Bucket, cost: number, now: number): Admission {
  const r = refill(policy, b, now);
  if (r.tokens > 0) return { ok: true, bucket: { tokens: r.tokens - cost, at: r.at } };
  // Until the bucket holds more than nothing again: the debt paid back, and a millisecond.
  const retryAfterMs = Math.floor((-r.tokens * 1000) / policy.ratePerSecond) + 1;
  return { ok: false, bucket: r, retryAfterMs };
}

/** A bucket back at full is no different from none: the caller may forget it. */
export function isFull(policy: BucketPolicy, b: Bucket, now: number): boolean {
  return refill(policy, b, now).tokens >= policy.burst;
}
