import { buildKey } from '../../../core/keys.js';
import { makeDiagnostic as diagnostic } from '../../../core/diagnostics/error.js';
import { desiredReplicas } from '../../../core/model/resolve.js';
import { unchanged, type Fact } from '../../facts.js';
import { absentEvidence, evidenceOf, type Evidence } from '../../decisions/record.js';
import { formatDelay } from '../backoff.js';
import { digest } from '../view.js';
import type { Gate, Pending } from './types.js';

/**
 * Holds before placement, each decided on facts in the store:
 * - backoff: a replacement of a failed replica is not placed before its `notBefore`;
 * - `after`: a replica is not placed until every service it starts after has its desired
 *   count ready, as `/endpoints/<dep>` says (one key, compared when the replica is placed).
 * `after` gates starting, not running: replicas already placed stay when a dependency
 * later drops below its count (docs/ordering.md).
 */
export interface Hold {
  pending: Pending;
  reasons: string[];
  /** Same basis and same reasons: nothing is rewritten (a converged hold writes nothing). */
  basis: string;
  evidence: Evidence[];
  /** A backoff hold ends by itself then: the scheduler wakes. */
  until?: number;
}

export interface DependencyFacts {
  services: ReadonlyMap<string, Fact<'service'>>;
  endpoints: ReadonlyMap<string, Fact<'endpoints'>>;
  autoscale: ReadonlyMap<string, Fact<'autoscale'>>;
}

/** A reason as people look it up: the code first (`cca explain CCA-E0417`). */
function coded(...args: Parameters<typeof diagnostic>): string {
  const d = diagnostic(...args);
  return `${d.code} ${d.message}`;
}

export function holdOf(p: Pending, deps: DependencyFacts, now: number): { hold: Hold } | { gate?: Gate } {
  const r = p.record.value;
  if (r.notBefore !== undefined && r.notBefore > now) {
    const delay = formatDelay(r.notBefore - r.createdAt);
    const failure = r.failure ?? 'a failure';
    const attempt = r.attempt ?? 1;
    const reasons = [
      `backing off after ${failure}, retry in ${delay} (failure ${attempt} in a row)${r.failureDiagnostic ? `: ${r.failureDiagnostic.code} ${r.failureDiagnostic.message}` : ''}`,
      coded('CCA-E0416', { replica: r.id, service: r.service, failure, attempt, delay }),
    ];
    return { hold: { pending: p, reasons, basis: digest([`backoff ${r.notBefore}`]), evidence: [], until: r.notBefore } };
  }
  const after = [...new Set(p.spec.value.after)].sort();
  if (after.length === 0) return {};
  const gate: Gate = { compares: [], evidence: [], reasons: [] };
  for (const dep of after) {
    const spec = deps.services.get(dep);
    const eps = deps.endpoints.get(dep);
    const intent = deps.autoscale.get(dep);
    const endpointsKey = buildKey('endpoints', dep);
    if (!spec) {
      const reasons = [`waiting for ${dep}: no service ${dep} exists`, coded('CCA-E0418', { replica: r.id, service: r.service, dependency: dep })];
      return { hold: { pending: p, reasons, basis: digest(reasons), evidence: [absentEvidence(buildKey('service', dep))] } };
    }
    const desired = desiredReplicas(spec.value, intent?.value.desired);
    // `ready` counts replicas past the listed bound too (endpoints.ts, ENDPOINT_LIMITS).
    const ready = eps?.value.ready ?? new Set((eps?.value.endpoints ?? []).map((e) => e.replica)).size;
    const evidence = [eps ? evidenceOf(eps) : absentEvidence(endpointsKey), evidenceOf(spec), ...(intent ? [evidenceOf(intent)] : [])];
    if (ready < desired) {
      const reasons = [`waiting for ${dep}: ${ready}/${desired} ready`, coded('CCA-E0417', { replica: r.id, service: r.service, dependency: dep, ready, desired })];
      return { hold: { pending: p, reasons, basis: digest(reasons), evidence } };
    }
    gate.compares.push(unchanged(eps, endpointsKey), unchanged(spec), unchanged(intent, buildKey('autoscale', dep)));
    gate.evidence.push(...evidence);
    gate.reasons.push(`after ${dep}: ${ready}/${desired} ready`);
  }
  return { gate };
}
