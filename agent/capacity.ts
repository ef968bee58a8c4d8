/**
 * A node's declared capacity from what the machine offers (pure: the agent's
 * `machine.ts` reads the facts). What the agent may use is the smaller of the machine and
 * the cgroup the agent itself runs in (a CPU quota, a memory limit), minus a reserve for
 * the agent, the runtime and the system; `--cpu` / `--memory` override the result.
 */

/** What the machine and the agent's cgroup report; absent cgroup fields mean no limit. */
export interface MachineFacts {
  /** CPUs the process may run on (`os.availableParallelism()`). */
  cpus: number;
  /** Physical memory (`os.totalmem()`). */
  memoryBytes: number;
  /** cgroup CPU quota and period in µs (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max). */
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  /** cgroup memory limit (v1 memory.limit_in_bytes, v2 memory.max). */
  memoryLimitBytes?: number;
}

const Mi = 1024 ** 2;

/**
 * The reserve kept back for the agent, the runtime and the system: the larger of 100m and
 * 5 % of the CPU, the larger of 256Mi and 10 % of the memory (docs/agent.md).
 */
export const RESERVE = { cpuMillis: 100, cpuFraction: 0.05, memoryBytes: 256 * Mi, memoryFraction: 0.1 } as const;

export interface Capacity {
  cpuMillis: number;
  memoryBytes: number;
  /** How each number was reached, for the agent's start-up line. */
  explain: string[];
}

/** CPU in millicores the agent may use: the CPU count, or less under a cgroup quota. */
export function usableCpuMillis(m: MachineFacts): number {
  const machine = Math.max(0, Math.floor(m.cpus)) * 1000;
  if (m.cpuQuotaUs === undefined || m.cpuQuotaUs <= 0 || !m.cpuPeriodUs || m.cpuPeriodUs <= 0) return machine;
  return Math.min(machine, Math.floor((m.cpuQuotaUs / m.cpuPeriodUs) * 1000));
}

/** Memory the agent may use: the machine's, or less under a cgroup limit (v1's "no limit" is a huge number, larger than the machine). */
export function usableMemoryBytes(m: MachineFacts): number {
  const machine = Math.max(0, Math.floor(m.memoryBytes));
  if (m.memoryLimitBytes === undefined || m.memoryLimitBytes <= 0) return machine;
  return Math.min(machine, Math.floor(m.memoryLimitBytes));
}

/** The capacity to declare: usable minus the reserve, never below zero. */
export function capacityOf(m: MachineFacts): Capacity {
  const cpu = usableCpuMillis(m);
  const mem = usableMemoryBytes(m);
  const cpuReserve = Math.max(RESERVE.cpuMillis, Math.ceil(cpu * RESERVE.cpuFraction));
  const memReserve = Math.max(RESERVE.memoryBytes, Math.ceil(mem * RESERVE.memoryFraction));
  const cpuMillis = Math.max(0, cpu - cpuReserve);
  const memoryBytes = Math.max(0, mem - memReserve);
  const limitedCpu = cpu < Math.floor(m.cpus) * 1000;
  const limitedMem = mem < Math.floor(m.memoryBytes);
  return {
    cpuMillis,
    memoryBytes,
    explain: [
      `cpu ${cpuMillis}m = ${cpu}m ${limitedCpu ? `(cgroup quota ${m.cpuQuotaUs}/${m.cpuPeriodUs} µs)` : `(${m.cpus} CPUs)`} - ${cpuReserve}m reserved`,
      `memory ${memoryBytes} bytes = ${mem} ${limitedMem ? '(cgroup limit)' : '(machine)'} - ${memReserve} reserved`,
    ],
  };
}
