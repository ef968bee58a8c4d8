import { describe, expect, test } from 'vitest';
import { AUTOSCALE, meanUtilisation, recommend, recordRecommendation, stabilise, windowMax, type CpuSample } from '../../core/model/autoscale.js';

const s = (replica: string, used: number, requested = 100): CpuSample => ({ replica, usedMillis: used, requestedMillis: requested });
const base = { targetCpuPercent: 50, min: 1, max: 10 };

describe('autoscale recommendation', () => {
  test('utilisation is the mean of used / requested', () => {
    expect(meanUtilisation([s('a', 50), s('b', 150, 300)])).toBeCloseTo(0.5);
    expect(meanUtilisation([s('a', 80, 100), s('b', 20, 100)])).toBeCloseTo(0.5);
    expect(meanUtilisation([])).toBeUndefined();
  });

  test('desired = ceil(current × utilisation / target)', () => {
    // 2 replicas at 90% of request, target 50%: ceil(2 × 1.8) = 4.
    expect(recommend({ ...base, current: 2, samples: [s('a', 90), s('b', 90)] })?.desired).toBe(4);
    // 4 replicas at 20%, target 50%: ceil(4 × 0.4) = 2.
    expect(recommend({ ...base, current: 4, samples: ['a', 'b', 'c', 'd'].map((r) => s(r, 20)) })?.desired).toBe(2);
    // Exactly on a boundary: 2 × 1.5 = 3, not 4 through floating-point dust.
    expect(recommend({ ...base, targetCpuPercent: 20, current: 2, samples: [s('a', 30), s('b', 30)] })?.desired).toBe(3);
  });

  test('within the tolerance band nothing changes; just outside it does', () => {
    // 54% vs 50%: ratio 1.08, inside ±10%.
    expect(recommend({ ...base, current: 3, samples: [s('a', 54), s('b', 54), s('c', 54)] })?.desired).toBe(3);
    expect(recommend({ ...base, current: 3, samples: [s('a', 46), s('b', 46), s('c', 46)] })?.desired).toBe(3);
    // 56%: ratio 1.12 → ceil(3.36) = 4.
    expect(recommend({ ...base, current: 3, samples: [s('a', 56), s('b', 56), s('c', 56)] })?.desired).toBe(4);
    // Tolerance 0: 54% moves.
    expect(recommend({ ...base, tolerance: 0, current: 3, samples: [s('a', 54), s('b', 54), s('c', 54)] })?.desired).toBe(4);
  });

  test('clamped to [min, max]', () => {
    const hot = recommend({ ...base, max: 3, current: 1, samples: [s('a', 1000)] })!;
    expect(hot.desired).toBe(3);
    expect(hot.reason).toContain('bounded to 1..3');
    expect(recommend({ ...base, min: 2, current: 4, samples: ['a', 'b', 'c', 'd'].map((r) => s(r, 0)) })?.desired).toBe(2);
  });

  test('no samples, no recommendation', () => {
    expect(recommend({ ...base, current: 3, samples: [] })).toBeUndefined();
  });

  test('unsampled replicas count as idle when scaling up and on target when scaling down', () => {
    // 2 sampled at 100% (ratio 2), 2 just started: up with the new ones idle → ratio 1 → no change.
    const up = recommend({ ...base, current: 4, samples: [s('a', 100), s('b', 100)] })!;
    expect(up.missing).toBe(2);
    expect(up.desired).toBe(4);
    // 1 sampled at 200% (ratio 4), 1 unsampled: (4 + 0) / 2 = 2 → ceil(2 × 2) = 4.
    expect(recommend({ ...base, current: 2, samples: [s('a', 200)] })?.desired).toBe(4);
    // Scaling down: 1 sampled idle, 3 unsampled count as on target → ratio 0.75 → ceil(3) = 3, not 1.
    expect(recommend({ ...base, current: 4, samples: [s('a', 0)] })?.desired).toBe(3);
  });
});

describe('stabilisation window', () => {
  const W = 300_000;
  test('windowMax: an entry holds until the next one; entries that ended before the window do not count', () => {
    const h = [{ at: 0, desired: 5 }, { at: 100_000, desired: 2 }];
    expect(windowMax(h, 200_000, W)).toBe(5);
    expect(windowMax(h, 399_999, W)).toBe(5); // 5 held until 100 000, which is inside (99 999, 399 999]
    expect(windowMax(h, 400_000, W)).toBe(2);
  });

  test('recordRecommendation appends only changes and prunes what ended before the window', () => {
    let h = recordRecommendation([], 3, 0, W);
    expect(recordRecommendation(h, 3, 10_000, W)).toEqual(h);
    h = recordRecommendation(h, 5, 10_000, W);
    h = recordRecommendation(h, 2, 20_000, W);
    expect(h).toEqual([{ at: 0, desired: 3 }, { at: 10_000, desired: 5 }, { at: 20_000, desired: 2 }]);
    h = recordRecommendation(h, 1, 400_000, W);
    expect(h).toEqual([{ at: 20_000, desired: 2 }, { at: 400_000, desired: 1 }]);
  });

  test('history is bounded', () => {
    let h: { at: number; desired: number }[] = [];
    for (let i = 0; i < 200; i++) h = recordRecommendation(h, i % 2, i, W);
    expect(h.length).toBe(AUTOSCALE.maxHistory);
  });

  test('scale up acts at once (rate-limited); scale down waits for the window', () => {
    expect(stabilise({ current: 2, recommended: 5, history: [], now: 0, windowMs: W }).desired).toBe(5);
    expect(stabilise({ current: 2, recommended: 20, history: [], now: 0, windowMs: W }).desired).toBe(6); // +4
    expect(stabilise({ current: 10, recommended: 50, history: [], now: 0, windowMs: W }).desired).toBe(20); // ×2
    const history = [{ at: 0, desired: 6 }, { at: 60_000, desired: 2 }];
    const held = stabilise({ current: 6, recommended: 2, history, now: 120_000, windowMs: W });
    expect(held.desired).toBe(6);
    expect(held.reason).toContain('held at 6');
    expect(stabilise({ current: 6, recommended: 2, history, now: 360_001, windowMs: W }).desired).toBe(2);
    // Partly: a 4 inside the window caps the step down at 4.
    const mid = [{ at: 0, desired: 6 }, { at: 100_000, desired: 4 }, { at: 200_000, desired: 2 }];
    expect(stabilise({ current: 6, recommended: 2, history: mid, now: 400_001, windowMs: W }).desired).toBe(4);
  });
});

describe('scale_down_window in the language', () => {
  test('parses to scaleDownWindowMs, prints back, and is optional', async () => {
    const { parse, toCca } = await import('../../core/lang/index.js');
    const r = parse('service web {\n  image = "busybox:1.35"\n  autoscale { min = 2 max = 6 target_cpu = 60% scale_down_window = 90s }\n}\n', 'a.cca');
    expect(r.diagnostics).toEqual([]);
    const spec = r.services[0]!;
    expect(spec.autoscale).toEqual({ min: 2, max: 6, targetCpuPercent: 60, scaleDownWindowMs: 90_000 });
    const text = toCca(spec);
    expect(text).toContain('scale_down_window = 1m30s');
    expect(parse(text, 'b.cca').services[0]).toEqual(spec);
    const plain = parse('service web {\n  image = "busybox:1.35"\n  autoscale { max = 3 }\n}\n', 'c.cca').services[0]!;
    expect(plain.autoscale).toEqual({ min: 1, max: 3, targetCpuPercent: 70 });
    expect(toCca(plain)).not.toContain('scale_down_window');
  });
});
