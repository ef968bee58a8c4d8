import { makeDiagnostic } from '../../core/diagnostics/index.js';
import type { NodeCondition } from '../../core/model/index.js';
import type { DiskHealth } from './ports.js';

/** How the agent watches its state directory's disk (docs/agent.md, "A full disk"). */
export const DISK = {
  /** How often the disk is asked how it is (statfs, and the failed writes tried again). */
  checkMs: 5_000,
  /** Default `--disk-min-free`: below this much free space the node takes no new placements. */
  defaultMinFreeBytes: 64 * 1024 * 1024,
} as const;

const mib = (n: number): string => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/**
 * Why the disk counts as full now, or undefined when it does not. Full: a state write failed
 * for want of space and has not worked since, or the free space is below `minFreeBytes`.
 * Once full, it stays full until the writes work again and twice `minFreeBytes` is free, so a
 * disk hovering at the threshold does not flip the node's condition at every check.
 */
export function diskFullReason(h: DiskHealth, minFreeBytes: number, wasFull: boolean): string | undefined {
  const failed = h.noSpace[0];
  if (failed) return `writing ${failed.file} failed: ${failed.reason}${h.noSpace.length > 1 ? ` (and ${h.noSpace.length - 1} more file${h.noSpace.length > 2 ? 's' : ''})` : ''}`;
  if (minFreeBytes <= 0 || h.freeBytes === undefined) return undefined;
  const threshold = wasFull ? 2 * minFreeBytes : minFreeBytes;
  if (h.freeBytes < threshold) return `${mib(h.freeBytes)} free, below ${wasFull ? 'twice ' : ''}--disk-min-free ${mib(minFreeBytes)}`;
  return undefined;
}

/**
 * The node's disk condition: what the agent reports on its node record while its state
 * directory is full (CCA-E0570), so the scheduler places nothing new there. Pure: the shell's
 * disk says how it is (`AgentDisk.health`), this decides whether the condition holds and
 * when it changed.
 */
export class DiskWatch {
  private current: NodeCondition | undefined;

  constructor(
    private readonly node: string,
    private readonly minFreeBytes: number,
  ) {}

  get condition(): NodeCondition | undefined {
    return this.current;
  }

  /** Look at one sample; returns true when the condition began or ended (publish it). */
  observe(h: DiskHealth, wallNow: number): boolean {
    const reason = diskFullReason(h, this.minFreeBytes, this.current !== undefined);
    if (reason === undefined) {
      if (this.current === undefined) return false;
      this.current = undefined;
      return true;
    }
    if (this.current !== undefined) return false;
    const d = makeDiagnostic('CCA-E0570', { node: this.node, dir: h.dir, reason });
    this.current = { kind: 'disk-full', code: d.code, message: d.message, since: Math.floor(wallNow) };
    return true;
  }
}
