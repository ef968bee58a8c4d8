/**
 * A workload's output files on the node: `<name>` (current) and `<name>.1` … `<name>.<keep>`
 * (the ones before, newest first), each at most `capBytes`, so a chatty workload holds at most
 * (1 + keep) × cap per stream (and the node's total cap, agent/log-budget.ts, trims the rotated
 * ones across replicas). Beside each
 * file a `<name>.times` index of `<offset> <epoch ms>` lines ("the bytes from offset on were
 * written no earlier than this"), at most one per second: the output itself stays exactly
 * what the workload wrote (other code and operators read it as is), and `--since` still finds
 * its place. Self-contained (node: imports only): the process runtime's supervisor imports it
 * and must start fast and outlive the agent.
 */
import { appendFileSync, closeSync, copyFileSync, existsSync, fstatSync, openSync, renameSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';

/** Default cap per file: a stream keeps at most 2 × 10 MiB (`--log-max-bytes` changes it). */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
/** Default number of rotated files per stream (`--log-files`), and the most there can be. */
export const DEFAULT_LOG_FILES = 1;
export const MAX_LOG_FILES = 9;
/** How far apart two time marks are, at least. */
const MARK_EVERY_MS = 1_000;

export const timesOf = (file: string): string => `${file}.times`;
/** The `n`th rotated file (1: the newest). */
export const rotatedOf = (file: string, n = 1): string => `${file}.${n}`;

/** Every rotated file that may exist, newest first (what a reader of the history goes through, reversed). */
export const allRotated = (file: string): string[] => Array.from({ length: MAX_LOG_FILES }, (_, i) => rotatedOf(file, i + 1));

/**
 * Make room for a new `.1`: `.k` becomes `.k+1` (their time indexes with them), the ones past
 * `keep` are deleted. Renames and deletes only: no new block is needed, so it works on a full disk.
 */
export function shiftRotated(file: string, keep: number): void {
  for (let k = MAX_LOG_FILES; k > keep - 1 && k >= 1; k--) {
    rmSync(rotatedOf(file, k), { force: true });
    rmSync(timesOf(rotatedOf(file, k)), { force: true });
  }
  for (let k = keep - 1; k >= 1; k--) {
    if (existsSync(rotatedOf(file, k))) renameSync(rotatedOf(file, k), rotatedOf(file, k + 1));
    if (existsSync(timesOf(rotatedOf(file, k)))) renameSync(timesOf(rotatedOf(file, k)), timesOf(rotatedOf(file, k + 1)));
  }
}

/** The writer the supervisor uses: appends, marks the time, rotates at the cap. */
export class RotatingLog {
  private fd: number;
  private size: number;
  private lastMark = 0;

  constructor(
    private readonly file: string,
    private readonly capBytes: number,
    private readonly now: () => number = Date.now,
    private readonly keep: number = DEFAULT_LOG_FILES,
  ) {
    this.fd = openSync(file, 'a');
    this.size = fstatSync(this.fd).size;
  }

  write(chunk: Buffer): void {
    if (this.size > 0 && this.size + chunk.length > this.capBytes) this.rotate();
    const t = this.now();
    if (t - this.lastMark >= MARK_EVERY_MS) {
      appendFileSync(timesOf(this.file), `${this.size} ${t}\n`);
      this.lastMark = t;
    }
    // One chunk larger than the cap is cut to its end: the cap holds whatever the workload writes.
    const data = chunk.length > this.capBytes ? chunk.subarray(chunk.length - this.capBytes) : chunk;
    writeSync(this.fd, data);
    this.size += data.length;
  }

  private rotate(): void {
    closeSync(this.fd);
    shiftRotated(this.file, this.keep);
    renameSync(this.file, rotatedOf(this.file));
    if (existsSync(timesOf(this.file))) renameSync(timesOf(this.file), timesOf(rotatedOf(this.file)));
    this.fd = openSync(this.file, 'a');
    this.size = 0;
    this.lastMark = 0;
  }
}

/**
 * For a file another process writes with O_APPEND (containerd's shim): mark the time of new
 * bytes and, past the cap, copy it to `<name>.1` and truncate it in place (the writer's next
 * append lands at the new end). What the writer appends between the copy and the truncation
 * is lost; returns the size seen (pass it back next time: no mark without new bytes). Checked every second, so a workload can overshoot the cap by one second of output.
 */
export function capAppendedLog(file: string, capBytes: number, now: number, seenSize = -1, keep = DEFAULT_LOG_FILES): number {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return -1;
  }
  if (size === seenSize) return size;
  if (size > capBytes) {
    shiftRotated(file, keep);
    try {
      copyFileSync(file, rotatedOf(file));
      if (existsSync(timesOf(file))) renameSync(timesOf(file), timesOf(rotatedOf(file)));
      else rmSync(timesOf(rotatedOf(file)), { force: true });
    } catch {
      // No room for the copy (a full disk): the output is lost rather than the disk.
      rmSync(rotatedOf(file), { force: true });
      rmSync(timesOf(file), { force: true });
    }
    truncateSync(file, 0);
    appendFileSync(timesOf(file), `0 ${now}\n`);
    return 0;
  }
  // The bytes from the size seen now on are newer than now; those before it older.
  appendFileSync(timesOf(file), `${size} ${now}\n`);
  return size;
}
