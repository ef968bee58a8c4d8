import { buildKey, decodeFact, encodeFact, parseKey, redactStoredValue } from '../../core/keys.js';
import type { Decision, Repeat } from '../../core/model/facts.js';
import type { KeyValue } from '../../db/store.js';
import { absent, putFact, unchanged, type Fact } from '../facts.js';
import { timeTag } from '../ids.js';
import type { Write } from '../write.js';

export type DecisionKind = Decision['kind'];
export type Evidence = Decision['evidence'][number];
export type Cause = NonNullable<Decision['cause']>;

/**
 * A decision's id is its time and a tag naming the controller and action, so a later step
 * can name an earlier decision as its cause without reading it (the replica's creation is
 * `<createdAt>-rc-create`). The write compares the key absent: a decision is never rewritten.
 */
export function decisionKey(kind: DecisionKind, subject: string, at: number, tag: string): string {
  return buildKey('decision', kind, subject, `${timeTag(at)}-${tag}`);
}

/** What a decision read from a key, as it was; secrets in specs are redacted first. */
export function evidenceOf(f: { key: string; kv: KeyValue }): Evidence {
  return { key: f.key, modRevision: f.kv.modRevision, value: redactStoredValue(f.key, f.kv.value) };
}

/** Evidence that a key was absent when read. */
export function absentEvidence(key: string): Evidence {
  return { key, modRevision: 0, value: '' };
}


export function causedBy(decision: string): Cause {
  return { decision };
}

/** A fact as the terminal cause: a desired key (a service) or an observed one (a node registration, an observation). */
export function causedByFact(f: { key: string; kv?: KeyValue; modRevision?: number }): Cause {
  return { fact: f.key, modRevision: f.kv?.modRevision ?? f.modRevision ?? 0 };
}

export interface DecisionInput {
  kind: DecisionKind;
  subject: string;
  controller: string;
  action: string;
  tag: string;
  at: number;
  evidence: Evidence[];
  cause: Cause;
  reasons: string[];
  basis?: string;
}

export interface DecisionWrite extends Write {
  key: string;
  decision: Decision;
}

/**
 * `trusted`: serialise without re-validating (the scheduler's placement path writes
 * thousands per step; every field there is built from typed, already validated values).
 */
export function decide(d: DecisionInput, trusted = false): DecisionWrite {
  const key = decisionKey(d.kind, d.subject, d.at, d.tag);
  const decision: Decision = {
    id: key.slice(key.lastIndexOf('/') + 1),
    kind: d.kind,
    subject: d.subject,
    controller: d.controller,
    action: d.action,
    at: d.at,
    evidence: d.evidence,
    cause: d.cause,
    reasons: d.reasons,
    ...(d.basis !== undefined ? { basis: d.basis } : {}),
  };
  return {
    key,
    decision,
    compares: [absent(key)],
    ops: [trusted ? { put: { key, value: JSON.stringify(decision) } } : putFact('decision', [d.kind, d.subject, decision.id], decision)],
  };
}

/**
 * Count one more repetition of an outcome in its summary (never a cause: nothing points
 * at a summary, and `why` only reports it).
 */
export function repeatOnce(
  controller: string,
  kind: DecisionKind,
  subject: string,
  decision: string,
  current: Fact<'repeat'> | undefined,
  at: number,
  basis?: string,
): Write {
  const key = buildKey('repeat', controller, kind, subject);
  const prev: Repeat | undefined = current?.value;
  const base: Repeat = prev && prev.decision === decision ? { ...prev, count: prev.count + 1, last: at } : { decision, count: 1, first: at, last: at };
  const next: Repeat = basis !== undefined ? { ...base, basis } : base;
  return { compares: [unchanged(current, key)], ops: [putFact('repeat', [controller, kind, subject], next)] };
}
