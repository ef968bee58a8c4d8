import { makeDiagnostic } from '../../core/diagnostics/index.js';
import { ServerError } from './errors.js';
import type { AgentClock, ControlPlane } from './ports.js';

/** Refused enrollments are retried, slower each time: an admin may take a while to reset the node or hand out a token. */
export const ENROLL_BACKOFF = { initialMs: 1_000, maxMs: 60_000 } as const;

/**
 * How long to wait before enrolling again after the `n`th refusal of the credential in a
 * row: the first at once (a reset or a restored store: the join token enrolls the node
 * again), later ones doubling from 1 s up to 60 s, so a server that keeps refusing what
 * it just issued (say, pods on different stores) is not asked in a tight loop.
 */
export function reenrollDelayMs(n: number): number {
  return n <= 1 ? 0 : Math.min(ENROLL_BACKOFF.initialMs * 2 ** (n - 2), ENROLL_BACKOFF.maxMs);
}

export interface EnrollmentDeps {
  node: string;
  /** Holds the credential and the join token; the core only asks it to enroll or forget. */
  control: ControlPlane;
  clock: AgentClock;
  log: (line: string) => void;
  event: (kind: string, message: string) => void;
  /** A new credential that worked this long counts as recovered: refusals count from zero again. */
  stableMs: number;
}

/**
 * The node's credential: enrollment with the join token when there is none, and recovery
 * when the server stops accepting it (a 401: `cca node reset`, or a store restored from a
 * backup). Recovery drops the credential and enrolls again; the lease keeper then registers
 * again (resuming its lease: the same tenure while the lease lives, a new one otherwise).
 * Workloads are not touched here: they run on until the fence rule says otherwise.
 * Durations are timed on the monotonic clock.
 */
export class Enrollment {
  private refusals = 0;
  private notBefore = 0;
  private enrolledAt: number | undefined;
  private backoffMs = 0;
  private lastRefusal = '';

  constructor(private readonly d: EnrollmentDeps) {}

  /**
   * Make sure a credential is in hand: 0 when it is (enrolled now or before), else how long
   * to wait before the next try. Unreachable servers and 5xx answers are thrown, for the
   * caller's usual retry.
   */
  async ensure(): Promise<number> {
    if (this.d.control.enrolled) return 0;
    const wait = this.notBefore - this.d.clock.mono();
    if (wait > 0) return wait;
    try {
      // The control plane keeps the credential (a failed write of it is reported by the disk, CCA-E0594; it works from memory).
      await this.d.control.enroll();
      this.d.log('enrolled');
      this.d.event('enrolled', this.refusals > 0 ? 'enrolled again with the join token after the credential was refused' : 'enrolled with the join token');
      this.enrolledAt = this.d.clock.mono();
      this.backoffMs = 0;
      this.lastRefusal = '';
      return 0;
    } catch (e) {
      if (!(e instanceof ServerError) || e.status >= 500) throw e;
      return this.enrollRefused(e);
    }
  }

  /**
   * A call answered 401. Only a refusal of the credential in hand counts: a call still in
   * flight with the previous credential can come back refused after the new one was issued,
   * and dropping the new one would leave the node unable to enroll (the server enrolls only
   * a node without a credential) — fenced for good. The error carries the generation of the
   * credential its call was made with (ControlPlane.generation).
   */
  refused(e: ServerError, call: string): void {
    const c = this.d.control;
    if (!c.enrolled || (e.generation !== undefined && e.generation !== c.generation)) return;
    this.refusals++;
    const delayMs = reenrollDelayMs(this.refusals);
    this.notBefore = this.d.clock.mono() + delayMs;
    const d = makeDiagnostic('CCA-E0590', { node: this.d.node, reason: `${e.diagnostic.code} ${e.diagnostic.message}`, call, attempt: this.refusals, delayMs });
    this.d.log(`${d.code} ${d.message}`);
    this.d.event('credential-refused', `${d.code} ${d.message}`);
    c.forgetCredential();
  }

  /** The credential worked (a registration or keepalive went through). */
  held(): void {
    if (this.enrolledAt === undefined || this.d.clock.mono() - this.enrolledAt < this.d.stableMs) return;
    this.enrolledAt = undefined;
    this.refusals = 0;
  }

  /** The join token was refused (or the node still has a credential): coded, logged once per cause, retried with backoff. */
  private enrollRefused(e: ServerError): number {
    this.backoffMs = Math.min(Math.max(this.backoffMs * 2, ENROLL_BACKOFF.initialMs), ENROLL_BACKOFF.maxMs);
    const cause = `${e.diagnostic.code} ${e.diagnostic.message}`;
    if (cause !== this.lastRefusal) {
      const d = makeDiagnostic('CCA-E0591', { node: this.d.node, serverCode: e.diagnostic.code, reason: `${e.diagnostic.message}; the server's fix: ${e.diagnostic.fix}`, delayMs: this.backoffMs, maxMs: ENROLL_BACKOFF.maxMs });
      this.d.log(`${d.code} ${d.message}`);
      this.d.event('enroll-refused', `${d.code} ${d.message}`);
    }
    this.lastRefusal = cause;
    return this.backoffMs;
  }
}
