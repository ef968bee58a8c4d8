/** Latencies counted in buckets of 0.1 ms: histograms from several processes add up. */
export type Histogram = Record<string, number>;

export function record(h: Histogram, ms: number): void {
  const k = String(Math.round(Math.max(0, ms) * 10));
  h[k] = (h[k] ?? 0) + 1;
}

export function merge(into: Histogram, from: Histogram): Histogram {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
  return into;
}

/** The p-th percentile in ms (nearest rank); NaN when empty. */
export function percentile(h: Histogram, p: number): number {
  const buckets = Object.entries(h)
    .map(([k, n]) => [Number(k), n] as const)
    .sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((a, [, n]) => a + n, 0);
  if (total === 0) return NaN;
  const rank = Math.min(total - 1, Math.floor((p / 100) * total));
  let seen = 0;
  for (const [k, n] of buckets) {
    seen += n;
    if (seen > rank) return k / 10;
  }
  return buckets.at(-1)![0] / 10;
}
