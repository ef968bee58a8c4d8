/**
 * When a converging count first reached each share of its target: where the seconds from
 * `apply` to "all running" went (records made, placed, running), from the status polls a
 * benchmark already makes. Pure: times are passed in.
 */
export const SHARES = [10, 50, 90, 100] as const;

export class Milestones<F extends string> {
  private readonly reached = new Map<F, Map<number, number>>();

  constructor(private readonly fields: readonly F[], private readonly target: number, private readonly t0: number) {
    for (const f of fields) this.reached.set(f, new Map());
  }

  /** One poll's counts at time `now` (same clock as t0, ms). */
  seen(now: number, counts: Record<F, number>): void {
    for (const f of this.fields) {
      const got = this.reached.get(f)!;
      for (const share of SHARES) {
        if (!got.has(share) && counts[f] * 100 >= share * this.target) got.set(share, (now - this.t0) / 1000);
      }
    }
  }

  /** Seconds from t0 at which each field reached each share (null: not reached). */
  json(): Record<F, Record<`${(typeof SHARES)[number]}%`, number | null>> {
    const out = {} as Record<F, Record<`${(typeof SHARES)[number]}%`, number | null>>;
    for (const f of this.fields) {
      const got = this.reached.get(f)!;
      out[f] = Object.fromEntries(SHARES.map((s) => [`${s}%`, got.has(s) ? Number(got.get(s)!.toFixed(2)) : null])) as Record<`${(typeof SHARES)[number]}%`, number | null>;
    }
    return out;
  }

  text(): string {
    return Object.entries(this.json())
      .map(([f, at]) => `${f} ${Object.entries(at as Record<string, number | null>).map(([s, t]) => `${s} ${t === null ? '—' : `${t.toFixed(2)} s`}`).join(', ')}`)
      .join('; ');
  }
}
