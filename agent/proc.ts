import { readdirSync, readFileSync } from 'node:fs';

/** Small /proc helpers shared by the process runtime and the supervisor checks. */

const PAGE = 4096;
const HZ = 100;

interface Stat {
  pgrp: number;
  ticks: number;
  startTime: string;
  rssBytes: number;
}

export function readStat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pgrp: Number(f[2]), ticks: Number(f[11]) + Number(f[12]), startTime: f[19] ?? '', rssBytes: Number(f[21]) * PAGE };
  } catch {
    return undefined;
  }
}

/** A process's start time in clock ticks since boot ('' when gone): with the pid, it names one process. */
export function startTimeOf(pid: number): string {
  return readStat(pid)?.startTime ?? '';
}

/** "pid starttime" as the supervisor writes it; alive only if the same process still holds the pid. */
export function parsePidFile(text: string): { pid: number; startTime: string } | undefined {
  const [pid, startTime] = text.trim().split(' ');
  const n = Number(pid);
  return Number.isInteger(n) && n > 0 ? { pid: n, startTime: startTime ?? '' } : undefined;
}

export function sameProcessAlive(p: { pid: number; startTime: string }): boolean {
  const s = readStat(p.pid);
  return s !== undefined && (p.startTime === '' || s.startTime === p.startTime);
}

/** CPU ticks and RSS of every process in a process group. */
export function groupUsage(pgid: number): { cpuSeconds: number; memoryBytes: number; processes: number } {
  let ticks = 0;
  let rss = 0;
  let processes = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s?.pgrp !== pgid) continue;
    ticks += s.ticks;
    rss += s.rssBytes;
    processes += 1;
  }
  return { cpuSeconds: ticks / HZ, memoryBytes: rss, processes };
}

/** Turns cumulative CPU seconds into millicores between two samples. */
export class CpuRate {
  private readonly last = new Map<string, { cpuSeconds: number; at: number; rate?: number }>();

  /** The rate since the previous sample, 0 for the first (kept for callers that need a number). */
  millis(key: string, cpuSeconds: number, at: number): number {
    return this.rate(key, cpuSeconds, at) ?? 0;
  }

  /**
   * The rate since the previous sample; undefined for the first, so a workload that just
   * started reports no usage rather than a false 0 (the autoscaler counts only real samples).
   * Samples closer than MIN_WINDOW_MS to the previous one return the previous rate and keep
   * the baseline: /proc counts CPU in 10 ms ticks, so a short window is mostly noise.
   */
  rate(key: string, cpuSeconds: number, at: number): number | undefined {
    const prev = this.last.get(key);
    if (prev && at - prev.at < MIN_WINDOW_MS) return prev.rate;
    const rate = prev ? Math.max(0, Math.round(((cpuSeconds - prev.cpuSeconds) * 1_000_000) / (at - prev.at))) : undefined;
    this.last.set(key, { cpuSeconds, at, ...(rate !== undefined ? { rate } : {}) });
    return rate;
  }

  forget(key: string): void {
    this.last.delete(key);
  }
}

const MIN_WINDOW_MS = 1_000;
