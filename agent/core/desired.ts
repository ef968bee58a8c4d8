import type { Assignment } from '../../core/model/index.js';
import type { AgentClock, AgentDisk } from './ports.js';

/**
 * The agent's desired state as far as it knows it: the cached desired state at start, the
 * server's assignments from its first answer on. While the cache could not say whether a
 * replica is still assigned (no cache, an unusable one, or its entry refused), the core
 * leaves that replica's workload alone — it keeps running, fenced only as the lease runs
 * out — instead of reading "not in the list" as "unassigned" and stopping it (docs/agent.md,
 * "Recovery").
 */
export class DesiredCache {
  private unknown: 'all' | ReadonlySet<string> = 'all';
  private listed = new Set<string>();

  constructor(
    private readonly disk: AgentDisk,
    private readonly clock: AgentClock,
  ) {}

  /** Read the cache (problems are reported by the disk); the assignments to start from. */
  load(): Assignment[] {
    const read = this.disk.desired(this.clock.wall());
    this.unknown = read.unknown;
    this.listed = new Set(read.assignments.map((a) => a.replica));
    return read.assignments;
  }

  /** The server's answer: known from now on, and cached (a failed write is reported by the disk, never thrown). */
  answered(revision: number, assignments: Assignment[]): void {
    this.unknown = new Set();
    this.listed = new Set(assignments.map((a) => a.replica));
    this.disk.saveDesired(revision, assignments);
  }

  /** Whether the core must leave this replica's workload alone: nothing known says whether it is still assigned. */
  leavesAlone(replica: string): boolean {
    if (this.listed.has(replica)) return false;
    return this.unknown === 'all' || this.unknown.has(replica);
  }
}
