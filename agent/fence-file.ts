/**
 * The fence deadline files (`<state>/fence-at`, `<state>/lease-fence-at`): one epoch-ms
 * number, zero-padded to a fixed width, **overwritten in place** rather than written to a
 * temporary file and renamed. Overwriting bytes a file already holds needs no free block, so
 * a full disk cannot leave the supervisors with a stale deadline (they would fence healthy
 * workloads at it). The price is that a reader can catch a write half done: readers read
 * twice and trust only two equal reads (`readFenceFile`). Self-contained (node: imports only):
 * the supervisor and the containerd fencer import it and must start fast.
 */
import { readFileSync } from 'node:fs';

/** Digits of a deadline: every epoch ms until the year 318857 fits, so the file never grows. */
export const FENCE_DIGITS = 16;

/** The file's whole content for a deadline: fixed width, so each write covers the previous one exactly. */
export function fenceText(at: number): string {
  return `${String(Math.max(0, Math.floor(at))).padStart(FENCE_DIGITS, '0')}\n`;
}

/**
 * The deadline in the file: NaN when it holds no number, undefined when it is missing, empty, or two
 * reads in a row differ (a write in progress: the caller looks again at its next check).
 * An older agent's file (the bare number, written by rename) reads the same.
 */
export function readFenceFile(file: string): number | undefined {
  try {
    const first = readFileSync(file, 'utf8');
    const second = readFileSync(file, 'utf8');
    // Empty: never written whole (the agent creates the file by rename, so only by accident): no deadline, not 0.
    return first === second && first.trim() !== '' ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}
