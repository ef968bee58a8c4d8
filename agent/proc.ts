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
  private readonly last = new Map<string, { cpuSeconds: number; at: number }>();

  millis(key: string, cpuSeconds: number, at: number): number {
    const prev = this.last.get(key);
    this.last.set(key, { cpuSeconds, at });
    if (!prev || at <= prev.at) return 0;
    return Math.max(0, Math.round(((cpuSeconds - prev.cpuSeconds) * 1_000_000) / (at - prev.at)));
  }

  forget(key: string): void {
    this.last.delete(key);
  }
}
