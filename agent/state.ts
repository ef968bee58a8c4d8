import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
import { assignmentSchema, type Assignment } from '../core/model/index.js';

/**
 * The agent's state directory. Everything an agent restart needs is here: its credential,
 * its lease and tenure, the last desired state it saw (with secrets: 0600), the fence
 * deadline the supervisors read, and one directory per replica.
 *
 *   credential       node credential from enrollment (0600)
 *   lease.json       { lease, tenure, ttl }
 *   desired.json     { revision, assignments } (0600: specs carry secrets)
 *   fence-at         epoch ms at which workloads must start stopping (the supervisors' deadline:
 *                    the lease's fence point, or later while peers confirm an outage)
 *   lease-fence-at   the lease's own fence point, for a restart (docs/fencing.md)
 *   replicas/<id>/   supervisor state, logs, materialized files
 *   volumes/<service>/<volume>/   local volumes (agent/volumes.ts), which outlive replicas
 */
export interface LeaseState {
  lease: number;
  tenure: number;
  ttl: number;
}

export class StateDir {
  readonly replicas: string;
  readonly fenceFile: string;

  constructor(readonly dir: string) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.replicas = join(dir, 'replicas');
      mkdirSync(this.replicas, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw new CcaError('CCA-E0512', { dir, reason: messageOf(e) });
    }
    this.fenceFile = join(dir, 'fence-at');
  }

  replicaDir(replica: string): string {
    return join(this.replicas, replica);
  }

  credential(): string | undefined {
    return this.read('credential')?.trim() || undefined;
  }

  saveCredential(credential: string): void {
    this.write('credential', credential, 0o600);
  }

  lease(): LeaseState | undefined {
    const text = this.read('lease.json');
    return text ? (JSON.parse(text) as LeaseState) : undefined;
  }

  saveLease(lease: LeaseState | undefined): void {
    this.write('lease.json', JSON.stringify(lease ?? null), 0o600);
  }

  desired(): { revision: number; assignments: Assignment[] } {
    const text = this.read('desired.json');
    if (!text) return { revision: 0, assignments: [] };
    try {
      const raw = JSON.parse(text) as { revision: number; assignments: unknown[] };
      // One by one: an assignment this agent's schema refuses (say, from an older server) is
      // dropped without losing the rest of the cache.
      const assignments = raw.assignments.flatMap((a) => {
        const r = assignmentSchema.safeParse(a);
        return r.success ? [r.data] : [];
      });
      return { revision: raw.revision, assignments };
    } catch {
      return { revision: 0, assignments: [] };
    }
  }

  saveDesired(revision: number, assignments: Assignment[]): void {
    this.write('desired.json', JSON.stringify({ revision, assignments }), 0o600);
  }

  /** The lease's own fence point (a restart resumes its fence clock from it). */
  fenceAt(): number | undefined {
    for (const name of ['lease-fence-at', 'fence-at']) {
      const text = this.read(name);
      const n = Number(text);
      if (text !== undefined && Number.isFinite(n)) return n;
    }
    return undefined;
  }

  /** The supervisors' deadline as last written (the lease's point, or a confirmed outage's end). */
  supervisorDeadline(): number | undefined {
    const text = this.read('fence-at');
    const n = Number(text);
    return text !== undefined && Number.isFinite(n) ? n : undefined;
  }

  /** A renewal moved the lease's fence point: both the supervisors' deadline and the lease's own. */
  saveFenceAt(at: number): void {
    this.write('lease-fence-at', String(Math.floor(at)), 0o644);
    this.write('fence-at', String(Math.floor(at)), 0o644);
  }

  /** Peers confirm an outage: the supervisors' deadline alone moves (to the confirmations' end, or back). */
  saveRunUntil(at: number): void {
    this.write('fence-at', String(Math.floor(at)), 0o644);
  }

  private read(name: string): string | undefined {
    try {
      return readFileSync(join(this.dir, name), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** Write-then-rename, so a crash never leaves half a file. */
  private write(name: string, text: string, mode: number): void {
    const tmp = join(this.dir, `.${name}.tmp`);
    writeFileSync(tmp, text, { mode });
    renameSync(tmp, join(this.dir, name));
  }
}
