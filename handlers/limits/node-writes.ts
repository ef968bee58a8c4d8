import { CcaError } from '../../core/diagnostics/index.js';
import { fullBucket, isFull, take, type Bucket, type BucketPolicy } from '../../core/limits/token-bucket.js';

/** Buckets kept before the full ones (no different from none) are forgotten. */
const SWEEP_AT = 1024;

/**
 * A node's observation and event writes, rate-limited per node on this pod: each key costs
 * one token (core/limits/token-bucket.ts). Over its rate a report is refused (429
 * CCA-E0643 with Retry-After) before anything is read or written; the agent waits and
 * sends its newest state then. The clock is injected.
 */
export class NodeWriteRate {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly policy: BucketPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** Admit `cost` keys written by `node`, or throw the coded refusal. */
  admit(node: string, cost: number): void {
    const now = this.now();
    const r = take(this.policy, this.buckets.get(node) ?? fullBucket(this.policy, now), Math.max(1, cost), now);
    this.buckets.set(node, r.bucket);
    if (this.buckets.size > SWEEP_AT) this.sweep(now);
    if (r.ok) return;
    throw new CcaError('CCA-E0643', {
      node,
      cost,
      ratePerSecond: this.policy.ratePerSecond,
      burst: this.policy.burst,
      retryAfterMs: r.retryAfterMs,
      retryAfterSeconds: Math.ceil(r.retryAfterMs / 1000),
    });
  }

  private sweep(now: number): void {
    for (const [node, b] of this.buckets) if (isFull(this.policy, b, now)) this.buckets.delete(node);
  }
}
