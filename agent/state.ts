import * as fs from 'node:fs';
import { join } from 'node:path';
import { CcaError, makeDiagnostic, messageOf, type Diagnostic } from '../core/diagnostics/index.js';
import type { Assignment } from '../core/model/index.js';
import type { AgentDisk, DiskHealth, LeaseState } from './core/ports.js';
import { DESIRED_FORMAT, parseDesired, type DesiredRead } from './desired-file.js';
import { fenceText, readFenceFile } from './fence-file.js';

export type { LeaseState } from './core/ports.js';

/** The file operations the state directory uses: node:fs, or a test's failing stand-in. */
export type StateIo = Pick<typeof fs, 'readFileSync' | 'writeFileSync' | 'renameSync' | 'unlinkSync' | 'readdirSync' | 'openSync' | 'writeSync' | 'closeSync' | 'fstatSync' | 'ftruncateSync' | 'statfsSync'>;

/** The errors that mean "no space": the disk (or the user's quota) is full. */
const NO_SPACE = new Set(['ENOSPC', 'EDQUOT']);

/** A write that failed, kept to be tried again (its latest content) until it works. */
interface Failed {
  text: string;
  mode: number;
  inPlace: boolean;
  reason: string;
  noSpace: boolean;
}

/** How many unusable desired-state files are kept aside (the oldest beyond this are removed). */
export const KEEP_BAD_DESIRED = 3;

/** What a stale copy of each file would do if the agent restarted before the next write worked. */
const RISK: Record<string, string> = {
  credential: 'a restarted agent would present the previous credential: refused, it would need `cca node reset` before it can enroll again',
  'lease.json': 'a restarted agent would resume the previous lease: the server gives it a new tenure instead, and its workloads are replaced',
  'desired.json': 'a restarted agent reads an older list of assignments, until the server answers',
  'fence-at': 'the workloads\' supervisors fence at the previous deadline: the workloads stop early unless the write works again before it',
  'lease-fence-at': 'a restarted agent would resume its fence clock from the previous fence point: it fences early',
};

/**
 * The agent's state directory. Everything an agent restart needs is here: its credential,
 * its lease and tenure, the last desired state it saw (with secrets: 0600), the fence
 * deadline the supervisors read, and one directory per replica.
 *
 *   credential       node credential from enrollment (0600)
 *   lease.json       { lease, tenure, ttl }
 *   desired.json     { format, revision, assignments } (0600: specs carry secrets)
 *   desired.json.bad-<time>   a cached desired state the agent could not use, kept for inspection
 *   fence-at         epoch ms at which workloads must start stopping (the supervisors' deadline:
 *                    the lease's fence point, or later while peers confirm an outage)
 *   lease-fence-at   the lease's own fence point, for a restart (docs/fencing.md)
 *   replicas/<id>/   supervisor state, logs, materialized files
 *   volumes/<service>/<volume>/   local volumes (agent/volumes.ts), which outlive replicas
 *
 * Writes never throw: they run from the agent's timers and loops, where an exception would
 * end a loop or crash the process. A failed write is reported (CCA-E0594) through
 * `onReport` once per file until it works again, and the agent carries on from memory.
 * It is the real node's AgentDisk (agent/core/ports.ts): the core installs `onReport`.
 */
export class StateDir implements AgentDisk {
  readonly replicas: string;
  readonly fenceFile: string;
  /** Where coded problems with the directory's files go (the agent logs and reports them); `d` is absent for a problem resolved. */
  onReport: (line: string, d?: Diagnostic) => void = (line) => process.stderr.write(`${line}\n`);
  private readonly failing = new Map<string, Failed>();

  constructor(
    readonly dir: string,
    private readonly io: StateIo = fs,
  ) {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      this.replicas = join(dir, 'replicas');
      fs.mkdirSync(this.replicas, { recursive: true, mode: 0o700 });
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

  saveCredential(credential: string): boolean {
    return this.write('credential', credential, 0o600);
  }

  lease(): LeaseState | undefined {
    const text = this.read('lease.json');
    try {
      const v = text ? (JSON.parse(text) as LeaseState | null) : undefined;
      return v && typeof v.lease === 'number' && typeof v.tenure === 'number' && typeof v.ttl === 'number' ? v : undefined;
    } catch {
      // A lease we cannot read is one we cannot resume: registering again gives a new tenure.
      return undefined;
    }
  }

  saveLease(lease: LeaseState | undefined): boolean {
    return this.write('lease.json', JSON.stringify(lease ?? null), 0o600);
  }

  /**
   * The cached desired state. A file this agent cannot use (unreadable, empty, not JSON, the
   * wrong shape, another format, assignments its schema refuses) is reported with its cause
   * and kept aside as `desired.json.bad-<time>`; the answer then says which replicas it
   * cannot tell about (`unknown`), and the agent leaves their workloads alone.
   */
  desired(now: number): DesiredRead {
    let text: string | undefined;
    let unreadable: string | undefined;
    try {
      text = this.io.readFileSync(join(this.dir, 'desired.json'), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') unreadable = messageOf(e);
    }
    const read = unreadable !== undefined ? { revision: 0, assignments: [], unknown: 'all' as const, problem: { code: 'CCA-E0592' as const, reason: unreadable } } : parseDesired(text);
    if (read.problem) {
      const file = join(this.dir, 'desired.json');
      this.problem(makeDiagnostic(read.problem.code, { file, reason: read.problem.reason, kept: this.keepAside('desired.json', now) }));
    }
    return read;
  }

  saveDesired(revision: number, assignments: Assignment[]): boolean {
    return this.write('desired.json', JSON.stringify({ format: DESIRED_FORMAT, revision, assignments }), 0o600);
  }

  /** The lease's own fence point (a restart resumes its fence clock from it). */
  fenceAt(): number | undefined {
    for (const name of ['lease-fence-at', 'fence-at']) {
      const n = this.readFence(name);
      if (n !== undefined && Number.isFinite(n)) return n;
    }
    return undefined;
  }

  /** The supervisors' deadline as last written (the lease's point, or a confirmed outage's end). */
  supervisorDeadline(): number | undefined {
    const n = this.readFence('fence-at');
    return n !== undefined && Number.isFinite(n) ? n : undefined;
  }

  /**
   * The lease's fence point moved: the supervisors' deadline (`supervisorsAt`, the fence point
   * unless a confirmed outage runs later) and the lease's own. Both are overwritten in place
   * (agent/fence-file.ts): on a full disk they still move.
   */
  saveFenceAt(at: number, supervisorsAt = at): boolean {
    // The supervisors' deadline first: it is the one that stops workloads.
    const supervisors = this.writeInPlace('fence-at', fenceText(supervisorsAt), 0o644);
    return this.writeInPlace('lease-fence-at', fenceText(at), 0o644) && supervisors;
  }

  /** Peers confirm an outage: the supervisors' deadline alone moves (to the confirmations' end, or back). */
  saveRunUntil(at: number): boolean {
    return this.writeInPlace('fence-at', fenceText(at), 0o644);
  }

  /**
   * How the disk is (AgentDisk.health): every failed write is tried again first with its
   * latest content, then the free space is read (statfs: what an unprivileged writer may use).
   */
  health(): DiskHealth {
    for (const [name, f] of [...this.failing]) {
      if (f.inPlace) this.writeInPlace(name, f.text, f.mode);
      else this.write(name, f.text, f.mode);
    }
    let freeBytes: number | undefined;
    try {
      const st = this.io.statfsSync(this.dir);
      freeBytes = Number(st.bavail) * Number(st.bsize);
    } catch {
      // Unknown: only failed writes count.
    }
    const noSpace = [...this.failing].filter(([, f]) => f.noSpace).map(([name, f]) => ({ file: join(this.dir, name), reason: f.reason }));
    return { dir: this.dir, noSpace, ...(freeBytes === undefined ? {} : { freeBytes }) };
  }

  private readFence(name: string): number | undefined {
    const file = join(this.dir, name);
    // Read through the injected io when a test replaces it; the fence-file rule (two equal reads) either way.
    if (this.io === fs) return readFenceFile(file);
    const text = this.read(name);
    return text === undefined || text.trim() === '' ? undefined : Number(text);
  }

  private read(name: string): string | undefined {
    try {
      return this.io.readFileSync(join(this.dir, name), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** Rename a file the agent cannot use to `<name>.bad-<time>`, keeping the newest few; says where it went. */
  private keepAside(name: string, now: number): string {
    const kept = `${name}.bad-${new Date(now).toISOString().replace(/:/g, '-')}`;
    try {
      this.io.renameSync(join(this.dir, name), join(this.dir, kept));
    } catch (e) {
      return `(not kept: ${messageOf(e)})`;
    }
    try {
      const copies = this.io.readdirSync(this.dir).filter((f) => f.startsWith(`${name}.bad-`)).sort();
      for (const old of copies.slice(0, Math.max(0, copies.length - KEEP_BAD_DESIRED))) this.io.unlinkSync(join(this.dir, old));
    } catch {
      // Pruning is housekeeping: a copy too many is no reason to stop.
    }
    return join(this.dir, kept);
  }

  /** Write-then-rename, so a crash never leaves half a file. False (and reported) when it failed. */
  private write(name: string, text: string, mode: number): boolean {
    const tmp = join(this.dir, `.${name}.tmp`);
    try {
      this.io.writeFileSync(tmp, text, { mode });
      this.io.renameSync(tmp, join(this.dir, name));
    } catch (e) {
      try {
        this.io.unlinkSync(tmp);
      } catch {
        // nothing was created
      }
      return this.failed(name, e, { text, mode, inPlace: false });
    }
    return this.written(name);
  }

  /**
   * Overwrite the file's bytes in place (a fixed-width text, agent/fence-file.ts): no new
   * block is needed, so it works on a full disk. A file not there yet is made by
   * write-then-rename, so no reader ever sees it empty.
   */
  private writeInPlace(name: string, text: string, mode: number): boolean {
    const file = join(this.dir, name);
    let fd: number;
    try {
      fd = this.io.openSync(file, 'r+');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return this.write(name, text, mode);
      return this.failed(name, e, { text, mode, inPlace: true });
    }
    try {
      this.io.writeSync(fd, text, 0, 'utf8');
      // An older agent's file was the bare number: shorter, never longer, but cut it to size anyway.
      if (this.io.fstatSync(fd).size > Buffer.byteLength(text)) this.io.ftruncateSync(fd, Buffer.byteLength(text));
    } catch (e) {
      return this.failed(name, e, { text, mode, inPlace: true });
    } finally {
      this.io.closeSync(fd);
    }
    return this.written(name);
  }

  private written(name: string): boolean {
    if (this.failing.delete(name)) this.onReport(`${join(this.dir, name)} written again (CCA-E0594 resolved)`);
    return true;
  }

  /** Kept to be tried again (AgentDisk.health), and reported once per file and cause: a full disk would otherwise be reported at every keepalive. */
  private failed(name: string, e: unknown, what: Pick<Failed, 'text' | 'mode' | 'inPlace'>): false {
    const reason = messageOf(e);
    const noSpace = NO_SPACE.has((e as NodeJS.ErrnoException | undefined)?.code ?? '');
    const before = this.failing.get(name);
    this.failing.set(name, { ...what, reason, noSpace });
    if (before?.reason !== reason) {
      this.problem(makeDiagnostic('CCA-E0594', { file: join(this.dir, name), reason, risk: RISK[name] ?? 'a restarted agent would read the previous file', dir: this.dir }));
    }
    return false;
  }

  private problem(d: Diagnostic): void {
    this.onReport(`${d.code} ${d.message}; fix: ${d.fix}`, d);
  }
}
