import { parsePromText, type Sample } from '../../test/support/prom-text.js';

/**
 * The Postgres store's write batches between two readings of a pod's /metrics: how many
 * committed, their sizes and how long each held a connection (connect to COMMIT), from
 * `cca_store_commit_duration_seconds` and `cca_store_commit_batch_size`. A user's write
 * waits for the batch in flight before its own goes: this is that wait's distribution.
 * And how long the store's reads and batches waited for a pool connection.
 */
export interface CommitReading {
  /** Cumulative count of batches at or under each bound (seconds), +Inf last. */
  durationBuckets: [number, number][];
  durationSum: number;
  count: number;
  sizeSum: number;
  /** The same for the store's waits for a pool connection (`cca_store_pool_wait_seconds`). */
  poolWaitBuckets: [number, number][];
  poolWaitSum: number;
  poolWaitCount: number;
}

export async function commitReading(server: string): Promise<CommitReading> {
  const { samples } = parsePromText(await (await fetch(`${server}/metrics`)).text());
  const one = (name: string) => samples.find((s) => s.name === name)?.value ?? 0;
  const buckets = (name: string) =>
    samples
      .filter((s: Sample) => s.name === `${name}_bucket`)
      .map((s): [number, number] => [s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), s.value])
      .sort((a, b) => a[0] - b[0]);
  return {
    durationBuckets: buckets('cca_store_commit_duration_seconds'),
    durationSum: one('cca_store_commit_duration_seconds_sum'),
    count: one('cca_store_commit_duration_seconds_count'),
    sizeSum: one('cca_store_commit_batch_size_sum'),
    poolWaitBuckets: buckets('cca_store_pool_wait_seconds'),
    poolWaitSum: one('cca_store_pool_wait_seconds_sum'),
    poolWaitCount: one('cca_store_pool_wait_seconds_count'),
  };
}

export interface CommitSummary {
  batches: number;
  meanOps: number;
  meanMs: number;
  /** The smallest bucket bound (ms) under which 99 % of the batches committed. */
  p99UnderMs: number;
  /** Batches over 50 ms and over 100 ms. */
  over50ms: number;
  over100ms: number;
  /** Seconds the batcher was busy (the sum of batch durations). */
  busySeconds: number;
  /** Checkouts from the store's pool (reads and batches), the bucket bound (ms) 99 % waited under, and how many waited over 10 ms. */
  checkouts: number;
  checkoutP99UnderMs: number;
  checkoutsOver10ms: number;
}

/** Between two readings of one histogram: its count, and the bound 99 % fell under and how many exceeded `over` (seconds). */
function histogramSince(now: [number, number][], before: [number, number][], count: number, over: number): { p99: number; exceeding: number } {
  const cum = now.map(([le, c], i): [number, number] => [le, c - (before[i]?.[1] ?? 0)]);
  const under = cum.find(([b]) => b === over)?.[1] ?? count;
  return { p99: cum.find(([, c]) => c >= 0.99 * count)?.[0] ?? Infinity, exceeding: count - under };
}

export function commitsSince(now: CommitReading, before: CommitReading): CommitSummary {
  const n = now.count - before.count;
  const d50 = histogramSince(now.durationBuckets, before.durationBuckets, n, 0.05);
  const d100 = histogramSince(now.durationBuckets, before.durationBuckets, n, 0.1);
  const busy = now.durationSum - before.durationSum;
  const checkouts = now.poolWaitCount - before.poolWaitCount;
  const waits = histogramSince(now.poolWaitBuckets, before.poolWaitBuckets, checkouts, 0.01);
  return {
    batches: n,
    meanOps: n > 0 ? (now.sizeSum - before.sizeSum) / n : 0,
    meanMs: n > 0 ? (1000 * busy) / n : 0,
    p99UnderMs: d50.p99 * 1000,
    over50ms: d50.exceeding,
    over100ms: d100.exceeding,
    busySeconds: busy,
    checkouts,
    checkoutP99UnderMs: waits.p99 * 1000,
    checkoutsOver10ms: waits.exceeding,
  };
}

export function commitsText(c: CommitSummary): string {
  return (
    `${c.batches} write batches, ${c.meanOps.toFixed(1)} ops and ${c.meanMs.toFixed(1)} ms each on average, 99 % under ${c.p99UnderMs} ms, ${c.over50ms} over 50 ms, ${c.over100ms} over 100 ms; the batcher busy ${c.busySeconds.toFixed(1)} s; ` +
    `${c.checkouts} pool checkouts, 99 % waited under ${c.checkoutP99UnderMs} ms, ${c.checkoutsOver10ms} over 10 ms`
  );
}
