/**
 * Crash and init-failure backoff, kept in the store (DESIGN: no hidden state). The replica
 * controller writes the replacement of a failed replica with the consecutive-failure count
 * (`attempt`) and the earliest time it may be placed (`notBefore`); the scheduler does not
 * place it before then. The delay starts at 1 s and doubles per consecutive failure up to
 * 5 min. A replica that stayed placed for 10 min before failing starts the count again.
 */
export const BACKOFF = {
  initialMs: 1_000,
  maxMs: 5 * 60_000,
  /** A failure after this long placed is a first failure again (like Kubernetes' 10 min). */
  resetAfterMs: 10 * 60_000,
} as const;

/** The delay before the replacement after `failures` consecutive failures (0 → none). */
export function backoffDelay(failures: number): number {
  if (failures <= 0) return 0;
  // 2^29 s is far past the cap: clamp the exponent so the arithmetic stays exact.
  return Math.min(BACKOFF.maxMs, BACKOFF.initialMs * 2 ** Math.min(failures - 1, 29));
}

/** The consecutive-failure count of a replacement, given the failed replica's count and how long it was placed. */
export function nextAttempt(previous: number, placedForMs: number): number {
  return (placedForMs >= BACKOFF.resetAfterMs ? 0 : previous) + 1;
}

/** "8 s", "2 min 8 s": for reasons people read. */
export function formatDelay(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
}
