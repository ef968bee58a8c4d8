import { makeDiagnostic, type Diagnostic } from '../../core/diagnostics/index.js';

/**
 * How the control plane answers the core when it does not answer with data. The HTTP client
 * (agent/client.ts) and the simulation's store-backed control plane (jobs/sim/agent.ts) both
 * throw these, so the core's reading of a failure is one policy.
 */

/** A coded answer from the server (4xx/5xx with `{ error: Diagnostic }`). */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly diagnostic: Diagnostic,
    /**
     * Which credential the call was made with (ControlPlane.generation), when it was made
     * with one: a 401 to a call made with a credential since replaced says nothing of the
     * credential in hand (agent/core/enrollment.ts).
     */
    readonly generation?: number,
  ) {
    super(`${status} ${diagnostic.code} ${diagnostic.message}`);
  }

  /**
   * How long the server asked us to wait before trying again (a 429: this node writing too
   * fast, CCA-E0643; too many streams, CCA-E0642), from the coded refusal's parameters.
   */
  get retryAfterMs(): number | undefined {
    if (this.status !== 429) return undefined;
    const { retryAfterMs, retryAfterSeconds } = this.diagnostic.params;
    if (typeof retryAfterMs === 'number' && retryAfterMs >= 0) return retryAfterMs;
    if (typeof retryAfterSeconds === 'number' && retryAfterSeconds >= 0) return retryAfterSeconds * 1000;
    return undefined;
  }

  /** The server is up but says its store is not: leases cannot expire meanwhile. */
  get storeUnavailable(): boolean {
    return this.status === 503 && (this.diagnostic.code === 'CCA-E0610' || /^CCA-E01\d\d$/.test(this.diagnostic.code));
  }
}

/**
 * No answer at all (refused, reset, timed out): the server may be down or we are partitioned.
 * A certificate we do not trust is one too (CCA-E0540): the agent retries it like any outage
 * (rule 8: its workloads keep running), but its message says to pass --ca.
 */
export class UnreachableError extends Error {
  readonly diagnostic: Diagnostic;

  constructor(url: string, reason: string, code: 'CCA-E0505' | 'CCA-E0540' = 'CCA-E0505') {
    const d = makeDiagnostic(code, { url, reason });
    super(code === 'CCA-E0540' ? `${d.message}; ${d.fix}` : d.message);
    this.diagnostic = d;
  }
}

/** A name or path the agent will not turn into a host path (agent/confine.ts): CCA-E0531 on the replica. */
export class Refusal extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'Refusal';
  }
}
