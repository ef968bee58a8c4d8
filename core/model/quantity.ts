/**
 * Exact unit arithmetic for the quantities a spec holds: memory in bytes, CPU in millicores,
 * durations in milliseconds. Decimal text is scaled with BigInt so `1.5Gi` is exactly
 * 1610612736 and `0.1Gi` is reported as inexact instead of silently rounded.
 */

export type QuantityKind = 'bytes' | 'cpu' | 'duration' | 'percent' | 'count';

export const byteUnits: Readonly<Record<string, bigint>> = {
  '': 1n,
  B: 1n,
  k: 1000n,
  K: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
};

/** CPU in millicores: bare numbers are cores, `m` is millicores. */
export const cpuUnits: Readonly<Record<string, bigint>> = { '': 1000n, m: 1n };

/** Durations in milliseconds. */
export const durationUnits: Readonly<Record<string, bigint>> = {
  ms: 1n,
  s: 1000n,
  m: 60_000n,
  h: 3_600_000n,
  d: 86_400_000n,
};

export interface Decimal {
  /** Digits before the point (at least one). */
  int: string;
  /** Digits after the point (may be empty). */
  frac: string;
  negative: boolean;
}

export type Scaled = { ok: true; value: number } | { ok: false; reason: 'inexact' | 'too-large' };

/** Largest value we accept anywhere, so every result is a safe JS integer. */
const LIMIT = BigInt(Number.MAX_SAFE_INTEGER);

/** `dec × factor`, required to be a whole number within the safe integer range. */
export function scaleDecimal(dec: Decimal, factor: bigint): Scaled {
  // Long digit strings are possible in fuzzed input; cap before BigInt so work stays small.
  if (dec.int.length + dec.frac.length > 40) return { ok: false, reason: 'too-large' };
  const digits = BigInt(dec.int + dec.frac);
  const denom = 10n ** BigInt(dec.frac.length);
  const num = digits * factor;
  if (num % denom !== 0n) return { ok: false, reason: 'inexact' };
  const whole = num / denom;
  if (whole > LIMIT) return { ok: false, reason: 'too-large' };
  return { ok: true, value: dec.negative ? -Number(whole) : Number(whole) };
}

/** Shortest exact text for a byte count: the largest binary unit that divides it, else a decimal one. */
export function formatBytes(bytes: number): string {
  for (const unit of ['Ti', 'Gi', 'Mi', 'Ki'] as const) {
    const f = Number(byteUnits[unit]);
    if (bytes !== 0 && bytes % f === 0) return `${bytes / f}${unit}`;
  }
  for (const unit of ['Ti', 'Gi', 'Mi'] as const) {
    const f = Number(byteUnits[unit]);
    // Fractions are exact when a quarter-unit divides it (e.g. 1.5Gi, 0.25Mi).
    if (bytes >= f && (bytes * 4) % f === 0) return `${(bytes * 4) / f / 4}${unit}`;
  }
  return String(bytes);
}

/** CPU as people write it: whole or simple fractional cores, else millicores. */
export function formatCpu(millis: number): string {
  if (millis % 1000 === 0) return String(millis / 1000);
  if (millis % 10 === 0 && millis > 1000) return String(millis / 1000);
  return `${millis}m`;
}

/** A duration in the largest units that divide it exactly, e.g. 90000 → 1m30s. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]] as const) {
    if (rest >= size) {
      const n = Math.floor(rest / size);
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
