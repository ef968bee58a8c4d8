import { describe, expect, test } from 'vitest';
import { fullBucket, isFull, take, type Bucket, type BucketPolicy } from '../../core/limits/token-bucket.js';

const policy: BucketPolicy = { ratePerSecond: 10, burst: 50 };

describe('the token bucket (pure, the clock passed in)', () => {
  test('a full bucket admits a burst, then refuses with the time until it admits again', () => {
    let b: Bucket = fullBucket(policy, 0);
    for (let i = 0; i < 5; i++) {
      const r = take(policy, b, 10, 0);
      expect(r.ok).toBe(true);
      b = r.bucket;
    }
    const refused = take(policy, b, 1, 0);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.retryAfterMs).toBe(1);
    // Admitted exactly when it said, not before.
    expect(take(policy, refused.bucket, 1, refused.retryAfterMs - 1).ok).toBe(false);
    expect(take(policy, refused.bucket, 1, refused.retryAfterMs).ok).toBe(true);
  });

  test('a request larger than the burst still goes through once, and its debt is paid back at the rate', () => {
    const big = take(policy, fullBucket(policy, 0), 200, 0);
    expect(big.ok).toBe(true);
    const next = take(policy, big.bucket, 1, 0);
    expect(next.ok).toBe(false);
    if (next.ok) return;
    // 150 tokens of debt at 10 a second: 15 s.
    expect(next.retryAfterMs).toBe(15_001);
    expect(take(policy, next.bucket, 1, 15_001).ok).toBe(true);
  });

  test('the long-run rate holds whatever the request sizes: 60 s of flooding admits at most burst + 60 s × rate', () => {
    let b = fullBucket(policy, 0);
    let admitted = 0;
    for (let t = 0; t <= 60_000; t += 7) {
      const r = take(policy, b, 3, t);
      b = r.bucket;
      if (r.ok) admitted += 3;
    }
    expect(admitted).toBeLessThanOrEqual(50 + 600 + 3);
    expect(admitted).toBeGreaterThanOrEqual(600);
  });

  test('a clock that goes back refills nothing; a bucket is full again after burst / rate', () => {
    const r = take(policy, fullBucket(policy, 1_000), 50, 1_000);
    expect(take(policy, r.bucket, 1, 0).ok).toBe(false);
    expect(isFull(policy, r.bucket, 5_999)).toBe(false);
    expect(isFull(policy, r.bucket, 6_000)).toBe(true);
  });
});
