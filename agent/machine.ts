import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import type { MachineFacts } from './capacity.js';

/** A cgroup file's first line, or undefined when it is not there (no such controller, no permission). */
function readLine(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').split('\n')[0]!.trim();
  } catch {
    return undefined;
  }
}

const num = (s: string | undefined): number | undefined => {
  if (s === undefined || s === '' || s === 'max') return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
};

/**
 * What this machine offers the agent (I/O; the arithmetic is `capacityOf` in capacity.ts):
 * the CPU count and physical memory, and the limits of the cgroup the agent runs in, as
 * seen at `root` (a container sees its own cgroup there). cgroup v2 first (`cpu.max`,
 * `memory.max`), then v1 (`cpu/cpu.cfs_quota_us`, `cpu/cpu.cfs_period_us`,
 * `memory/memory.limit_in_bytes`).
 */
export function readMachine(root = '/sys/fs/cgroup'): MachineFacts {
  const facts: MachineFacts = { cpus: availableParallelism(), memoryBytes: totalmem() };
  const v2cpu = readLine(`${root}/cpu.max`);
  if (v2cpu !== undefined) {
    const [quota, period] = v2cpu.split(/\s+/);
    const q = num(quota);
    const p = num(period);
    if (q !== undefined && p !== undefined) Object.assign(facts, { cpuQuotaUs: q, cpuPeriodUs: p });
  } else {
    const q = num(readLine(`${root}/cpu/cpu.cfs_quota_us`));
    const p = num(readLine(`${root}/cpu/cpu.cfs_period_us`));
    if (q !== undefined && q > 0 && p !== undefined) Object.assign(facts, { cpuQuotaUs: q, cpuPeriodUs: p });
  }
  const mem = num(readLine(`${root}/memory.max`)) ?? num(readLine(`${root}/memory/memory.limit_in_bytes`));
  if (mem !== undefined) facts.memoryLimitBytes = mem;
  return facts;
}
