/**
 * The node's total cap on workload output (`--log-max-total`): each stream is capped on its
 * own (agent/logfile.ts), and this keeps the sum over every replica under one figure by
 * deleting the oldest **rotated** files first. A current file is never touched (its writer
 * holds it open and its time index must stay true), so the cap holds as long as the current
 * files alone fit under it: at most replicas × streams × --log-max-bytes.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { timesOf } from './logfile.js';

/** How often the agent adds the files up. */
export const LOG_BUDGET_CHECK_MS = 5_000;
/** Default `--log-max-total`. */
export const DEFAULT_LOG_MAX_TOTAL = 1024 * 1024 * 1024;

/** One output file of one replica. */
export interface LogFileInfo {
  path: string;
  size: number;
  mtimeMs: number;
  /** A rotated copy (`.1` … `.9`), which may go; a current file never does. */
  rotated: boolean;
}

const OUTPUT = /^(stdout|stderr|init)\.log(\.(\d))?$/;

/** Which rotated files to delete, oldest first, until the total is at most `capBytes`. Pure. */
export function overBudget(files: readonly LogFileInfo[], capBytes: number): string[] {
  let total = files.reduce((sum, f) => sum + f.size, 0);
  const gone: string[] = [];
  const candidates = files.filter((f) => f.rotated).sort((a, b) => a.mtimeMs - b.mtimeMs || a.path.localeCompare(b.path));
  for (const f of candidates) {
    if (total <= capBytes) break;
    gone.push(f.path);
    total -= f.size;
  }
  return gone;
}

/** The output files under `<state>/replicas/`, with their sizes (a file gone meanwhile is left out). */
export function listLogFiles(replicasDir: string): LogFileInfo[] {
  const out: LogFileInfo[] = [];
  let replicas: string[];
  try {
    replicas = readdirSync(replicasDir);
  } catch {
    return out;
  }
  for (const r of replicas) {
    let names: string[];
    try {
      names = readdirSync(join(replicasDir, r));
    } catch {
      continue;
    }
    for (const name of names) {
      const m = OUTPUT.exec(name);
      if (!m) continue;
      try {
        const st = statSync(join(replicasDir, r, name));
        out.push({ path: join(replicasDir, r, name), size: st.size, mtimeMs: st.mtimeMs, rotated: m[3] !== undefined });
      } catch {
        // removed with its replica meanwhile
      }
    }
  }
  return out;
}

/** Apply the node's cap once; returns what was deleted. Never throws: this runs from a timer. */
export function enforceLogBudget(replicasDir: string, capBytes: number): string[] {
  const gone = overBudget(listLogFiles(replicasDir), capBytes);
  for (const path of gone) {
    try {
      rmSync(path, { force: true });
      rmSync(timesOf(path), { force: true });
    } catch {
      // Not ours to delete after all (permissions): the next check tries again.
    }
  }
  return gone;
}
