import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { capacityOf, usableCpuMillis, usableMemoryBytes } from '../../agent/capacity.js';
import { readMachine } from '../../agent/machine.js';
import { parseAgentFlags } from '../../agent/options.js';
import { NODE_REPLICAS } from '../../core/model/node.js';

const Gi = 1024 ** 3;
const Mi = 1024 ** 2;
const V1_NO_LIMIT = 9223372036854771712;

describe('capacity arithmetic', () => {
  test('the machine minus the reserve when nothing limits the agent', () => {
    const c = capacityOf({ cpus: 8, memoryBytes: 32 * Gi, cpuQuotaUs: -1, cpuPeriodUs: 100_000, memoryLimitBytes: V1_NO_LIMIT });
    expect(c.cpuMillis).toBe(8000 - 400); // 5 % of 8000m beats the 100m floor
    expect(c.memoryBytes).toBe(32 * Gi - Math.ceil(3.2 * Gi));
  });

  test('a cgroup quota and memory limit below the machine win', () => {
    const m = { cpus: 8, memoryBytes: 32 * Gi, cpuQuotaUs: 150_000, cpuPeriodUs: 100_000, memoryLimitBytes: 2 * Gi };
    expect(usableCpuMillis(m)).toBe(1500);
    expect(usableMemoryBytes(m)).toBe(2 * Gi);
    const c = capacityOf(m);
    expect(c.cpuMillis).toBe(1400); // the 100m floor
    expect(c.memoryBytes).toBe(2 * Gi - 256 * Mi); // the 256Mi floor
    expect(c.explain[0]).toContain('cgroup quota');
  });

  test('a quota above the machine does not add CPUs; a tiny machine declares zero, not a negative', () => {
    expect(usableCpuMillis({ cpus: 2, memoryBytes: Gi, cpuQuotaUs: 800_000, cpuPeriodUs: 100_000 })).toBe(2000);
    expect(capacityOf({ cpus: 0, memoryBytes: 100 * Mi })).toMatchObject({ cpuMillis: 0, memoryBytes: 0 });
  });
});

describe('reading the machine', () => {
  const cgroup = (files: Record<string, string>) => {
    const root = mkdtempSync(join(tmpdir(), 'cca-cgroup-'));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), `${text}\n`);
    }
    return root;
  };

  test('cgroup v1 quota and limit', () => {
    const m = readMachine(cgroup({ 'cpu/cpu.cfs_quota_us': '50000', 'cpu/cpu.cfs_period_us': '100000', 'memory/memory.limit_in_bytes': String(512 * Mi) }));
    expect(m).toMatchObject({ cpuQuotaUs: 50_000, cpuPeriodUs: 100_000, memoryLimitBytes: 512 * Mi });
    expect(capacityOf(m)).toMatchObject({ cpuMillis: 400, memoryBytes: 256 * Mi });
  });

  test('cgroup v1 without a quota (-1) and v2 "max" mean no limit', () => {
    expect(readMachine(cgroup({ 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' })).cpuQuotaUs).toBeUndefined();
    const v2 = readMachine(cgroup({ 'cpu.max': 'max 100000', 'memory.max': 'max' }));
    expect(v2.cpuQuotaUs).toBeUndefined();
    expect(v2.memoryLimitBytes).toBeUndefined();
  });

  test('cgroup v2 quota and limit', () => {
    expect(readMachine(cgroup({ 'cpu.max': '200000 100000', 'memory.max': String(Gi) }))).toMatchObject({ cpuQuotaUs: 200_000, cpuPeriodUs: 100_000, memoryLimitBytes: Gi });
  });

  test('this machine: something positive', () => {
    const c = capacityOf(readMachine());
    expect(c.cpuMillis).toBeGreaterThan(0);
    expect(c.memoryBytes).toBeGreaterThan(0);
  });
});

describe('flags', () => {
  const base = ['--server', 'http://s', '--node', 'n1'];
  const machine = () => ({ cpus: 4, memoryBytes: 8 * Gi, cpuQuotaUs: 100_000, cpuPeriodUs: 100_000 });

  test('without --cpu/--memory the detected capacity is declared', () => {
    expect(parseAgentFlags(base, {}, machine)).toMatchObject({ cpuMillis: 900, memoryBytes: 8 * Gi - Math.ceil(0.8 * Gi) });
  });

  test('--cpu and --memory override, and the machine is not read then', () => {
    const f = parseAgentFlags([...base, '--cpu', '3', '--memory', '1Gi'], {}, () => {
      throw new Error('read');
    });
    expect(f).toMatchObject({ cpuMillis: 3000, memoryBytes: Gi });
  });

  test('--max-replicas: the node replica cap, 1 to NODE_REPLICAS.max, default NODE_REPLICAS.default (CCA-E0508 otherwise)', () => {
    const flags = (...extra: string[]) => parseAgentFlags([...base, '--cpu', '1', '--memory', '1Gi', ...extra], {}, machine);
    expect(flags().maxReplicas).toBe(NODE_REPLICAS.default);
    expect(flags('--max-replicas', '40').maxReplicas).toBe(40);
    for (const bad of ['0', String(NODE_REPLICAS.max + 1), '2.5', 'many']) expect(() => flags('--max-replicas', bad)).toThrow(/CCA-E0508|max-replicas/);
  });
});
