/**
 * The replica controller's record and decision builders, shared by its two planners
 * (replica.ts: scale and replace; replica-roll.ts: rolling updates) so neither imports the other.
 */
import { buildKey } from '../../core/keys.js';
import type { ReplicaRecord } from '../../core/model/facts.js';
import { originText, type ReplicaEnded, type ReplicaOrigin } from '../../core/model/replica-outcome.js';
import { templateHash } from '../../core/model/template.js';
import type { StepContext } from '../controller.js';
import { clipText } from '../decisions/bounds.js';
import { decide, evidenceOf, type Cause } from '../decisions/record.js';
import { absent, putFact, type Fact } from '../facts.js';
import { newReplicaId } from '../ids.js';
import type { Write } from '../write.js';
import { isRunning, type ReplicaState } from './replica-state.js';

export const REPLICA_CONTROLLER = 'replica';

export interface ReplicaDraft extends Write {
  record: ReplicaRecord;
  key: string;
}

/** Why a replica is created: its typed origin, and for a replacement the replica it replaces. */
export interface Why {
  origin: ReplicaOrigin;
  replaces?: { replica: string; ended: ReplicaEnded };
}

/** What a replacement of a failed replica carries: see backoff.ts. */
export interface Backoff {
  attempt: number;
  notBefore: number;
  failure: string;
  diagnostic?: { code: string; message: string };
}

export function draftReplica(ctx: StepContext, spec: Fact<'service'>, cause: Cause, why: Why = { origin: { by: 'scale' } }, backoff?: Backoff): ReplicaDraft {
  const service = spec.value.name;
  const id = newReplicaId(service, ctx.random);
  const record: ReplicaRecord = {
    id,
    service,
    specRevision: spec.kv.modRevision,
    template: templateHash(spec.value),
    desired: 'run',
    createdAt: ctx.now,
    retired: false,
    reason: '',
    origin: why.origin,
    ...(why.replaces ? { replaces: why.replaces } : {}),
    // The agent's failure texts are clipped: the record's size must not follow what a node reports (docs/limits.md).
    ...(backoff
      ? {
          attempt: backoff.attempt,
          notBefore: backoff.notBefore,
          failure: clipText(backoff.failure),
          ...(backoff.diagnostic ? { failureDiagnostic: { code: clipText(backoff.diagnostic.code, 16), message: clipText(backoff.diagnostic.message) } } : {}),
        }
      : {}),
  };
  const key = buildKey('replica', service, id);
  const reason = originText(record);
  const d = decide({
    kind: 'replica',
    subject: id,
    controller: REPLICA_CONTROLLER,
    action: 'created',
    tag: 'rc-create',
    at: ctx.now,
    evidence: [evidenceOf(spec)],
    cause,
    reasons: [
      reason || `service ${service} wants ${spec.value.replicas} replica(s)`,
      ...(backoff ? [`backoff: failure ${backoff.attempt} in a row, not placed before ${backoff.notBefore - ctx.now} ms from now`] : []),
    ],
  });
  return { record, key, compares: [absent(key), ...d.compares], ops: [putFact('replica', [service, id], record), ...d.ops] };
}

/** The stop decision of a replica: cited by the scheduler's stop order and release. */
export function stopDecision(s: ReplicaState, now: number, action: string, cause: Cause, reasons: string[], evidence = [evidenceOf(s.record)]) {
  return decide({ kind: 'replica', subject: s.record.value.id, controller: REPLICA_CONTROLLER, action, tag: 'rc-stop', at: now, evidence, cause, reasons });
}

export function scaleDownOrder(a: ReplicaState, b: ReplicaState): number {
  const rank = (s: ReplicaState) => (!s.placement ? 0 : !isRunning(s) ? 1 : 2);
  return rank(a) - rank(b) || b.record.value.createdAt - a.record.value.createdAt || (a.record.value.id < b.record.value.id ? 1 : -1);
}
