/**
 * The autoscaler's arithmetic, pure, shared by the controller (jobs/controllers/autoscaler.ts)
 * and the status view (jobs/views/status.ts) so both say the same utilisation. docs/autoscaling.md
 * states the same rules in prose.
 */

/** Defaults of the autoscaler; a spec may set its own scale-down window. */
export const AUTOSCALE = {
  /** No change while the utilisation is within ±10% of the target (Kubernetes' default). */
  tolerance: 0.1,
  /** Scale down only to the highest recommendation of the last 5 minutes (Kubernetes' default). */
  scaleDownWindowMs: 300_000,
  /** How often the autoscaler looks at the usage agents report (Kubernetes' HPA sync period). */
  syncMs: 15_000,
  /** One scale-up step goes at most to max(2 × current, current + 4) (Kubernetes' default policy). */
  scaleUpFactor: 2,
  scaleUpPods: 4,
  /** Recommendations kept in the intent record, whatever the window (bounds its size). */
  maxHistory: 64,
} as const;

/** One running replica's CPU sample: what it used and what it requested, in millicores. */
export interface CpuSample {
  replica: string;
  usedMillis: number;
  requestedMillis: number;
}

/** Mean of used/requested over the samples (1 = exactly the request); undefined without samples. */
export function meanUtilisation(samples: readonly CpuSample[]): number | undefined {
  const usable = samples.filter((s) => s.requestedMillis > 0);
  if (usable.length === 0) return undefined;
  return usable.reduce((sum, s) => sum + s.usedMillis / s.requestedMillis, 0) / usable.length;
}

export interface RecommendInput {
  /** Live replicas now (sampled + not yet sampled). */
  current: number;
  samples: readonly CpuSample[];
  targetCpuPercent: number;
  min: number;
  max: number;
  tolerance?: number;
}

export interface Recommendation {
  /** The raw recommendation, within [min, max]. */
  desired: number;
  /** Mean utilisation of the sampled replicas (fraction of their request). */
  utilisation: number;
  /** utilisation / target, after counting unsampled replicas conservatively. */
  ratio: number;
  /** Live replicas without a sample yet. */
  missing: number;
  reason: string;
}

const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n));
/** ceil that ignores floating-point dust: 2 × 1.0000000000000002 is 2, not 3. */
const ceil = (x: number) => Math.ceil(x - 1e-9);
const pct = (x: number) => `${Math.round(x * 100)}%`;

/**
 * desired = ceil(current × utilisation / target), clamped to [min, max]; no change within
 * the tolerance band. Replicas without a sample yet (just started) do not count toward the
 * utilisation, but they are not ignored either (as Kubernetes does): when scaling up they
 * count as idle, when scaling down as exactly on target, so a replica still warming up
 * never causes a bigger step than the sampled ones justify. Undefined without any sample.
 */
export function recommend(input: RecommendInput): Recommendation | undefined {
  const { samples, targetCpuPercent, min, max } = input;
  const tolerance = input.tolerance ?? AUTOSCALE.tolerance;
  const utilisation = meanUtilisation(samples);
  if (utilisation === undefined) return undefined;
  const sampled = samples.filter((s) => s.requestedMillis > 0).length;
  const current = Math.max(input.current, sampled);
  const missing = current - sampled;
  const target = targetCpuPercent / 100;
  const raw = utilisation / target;
  const seen = `cpu ${pct(utilisation)} of request over ${sampled} replica(s) (target ${targetCpuPercent}%)`;
  const keep = (why: string): Recommendation => ({ desired: clamp(current, min, max), utilisation, ratio: raw, missing, reason: `${seen}: ${why}` });
  if (Math.abs(raw - 1) <= tolerance && missing === 0) return keep(`within the ±${pct(tolerance)} tolerance`);
  let ratio = raw;
  if (missing > 0) {
    // Unsampled replicas: idle when scaling up, on target when scaling down.
    const filled = raw * sampled + (raw < 1 ? missing : 0);
    ratio = filled / current;
    if (Math.abs(ratio - 1) <= tolerance || (raw > 1) !== (ratio > 1)) return keep(`${missing} unsampled replica(s) make the change uncertain`);
  }
  // Reports are whole millicores: their rounding (±0.5m each) alone never adds a replica.
  const slack = samples.reduce((sum, s) => sum + (s.requestedMillis > 0 ? 0.5 / (s.requestedMillis * target) : 0), 0);
  const want = ceil(current * ratio - slack);
  const desired = clamp(want, min, max);
  const bounded = desired !== want ? ` (bounded to ${min}..${max})` : '';
  return { desired, utilisation, ratio, missing, reason: `${seen}: ceil(${current} × ${ratio.toFixed(2)}) = ${want}${bounded}` };
}

/** A recommendation as recorded in the intent: in force from `at` until the next one. */
export interface RecordedRecommendation {
  at: number;
  desired: number;
}

/**
 * The highest recommendation in force at any time in (now − window, now]: each entry holds
 * from its `at` until the next entry's, the last one until now.
 */
export function windowMax(history: readonly RecordedRecommendation[], now: number, windowMs: number): number | undefined {
  let best: number | undefined;
  for (const [i, h] of history.entries()) {
    const end = history[i + 1]?.at ?? Infinity;
    if (end <= now - windowMs) continue;
    best = best === undefined ? h.desired : Math.max(best, h.desired);
  }
  return best;
}

/** Appends a changed recommendation and drops entries that ended before the window. */
export function recordRecommendation(history: readonly RecordedRecommendation[], rec: number, now: number, windowMs: number): RecordedRecommendation[] {
  const last = history[history.length - 1];
  if (last && last.desired === rec) return [...history];
  const next = [...history, { at: now, desired: rec }];
  const kept = next.filter((_, i) => (next[i + 1]?.at ?? Infinity) > now - windowMs);
  return kept.slice(-AUTOSCALE.maxHistory);
}

export interface StabiliseInput {
  /** What the replica controller aims for now (the current intent, else the spec's replicas). */
  current: number;
  /** This step's raw recommendation. */
  recommended: number;
  /** The recorded recommendations, this step's included. */
  history: readonly RecordedRecommendation[];
  now: number;
  windowMs: number;
}

/**
 * Scale up at once (at most doubling, or +4, per step); scale down only to the highest
 * recommendation of the window, so a dip in load shorter than the window changes nothing.
 */
export function stabilise(input: StabiliseInput): { desired: number; reason: string } {
  const { current, recommended } = input;
  if (recommended > current) {
    const limit = Math.max(current * AUTOSCALE.scaleUpFactor, current + AUTOSCALE.scaleUpPods);
    const desired = Math.min(recommended, limit);
    return { desired, reason: desired < recommended ? `scale up limited to ${desired} this step (at most ×${AUTOSCALE.scaleUpFactor} or +${AUTOSCALE.scaleUpPods})` : 'scale up at once' };
  }
  const high = Math.max(recommended, windowMax(input.history, input.now, input.windowMs) ?? recommended);
  if (high >= current) return { desired: current, reason: recommended < current ? `held at ${current}: recommended ${high} within the last ${input.windowMs / 1000} s` : 'no change' };
  return { desired: high, reason: `highest recommendation in the last ${input.windowMs / 1000} s is ${high}` };
}
