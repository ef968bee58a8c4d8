import { readFile } from 'node:fs/promises';
import os from 'node:os';

/** CPU seconds (user + system) and resident bytes of one process, from /proc (Linux). */
export async function usage(pid: number): Promise<{ cpu: number; rss: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  return { cpu: ticks / 100, rss };
}

/** The p-th percentile (nearest rank) of a list of numbers; NaN when empty. */
export function pct(xs: readonly number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
}

/** The 1-minute load average, rounded: every benchmark prints it beside its figures. */
export const load = (): number => Number(os.loadavg()[0]!.toFixed(2));

export const mib = (bytes: number): number => Number((bytes / 2 ** 20).toFixed(1));

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `--name N` from the command line, or `dflt`. */
export function numberArg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
