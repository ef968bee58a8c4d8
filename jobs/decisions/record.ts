import { buildKey, decodeFact, encodeFact, parseKey, redactStoredValue } from '../../core/keys.js';
import { sha256OfText } from '../../core/sha256.js';
import { utf8Length } from '../../db/keyspace.js';
import type { Decision, Repeat } from '../../core/model/facts.js';
import type { KeyValue } from '../../db/store.js';
import { absent, putFact, unchanged, type Fact } from '../facts.js';
import { timeTag } from '../ids.js';
import type { Write } from '../write.js';
import { CITED_KINDS, clipText, DECISION_LIMITS } from './bounds.js';

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

/**
 * What a decision read from a key, as it was (secrets in specs redacted first). The rule:
 * a value that holds a spec (a service, an assignment) or is over
 * `DECISION_LIMITS.embedMaxBytes` is **cited** — key, mod revision, the SHA-256 of the
 * redacted value and its size — and every other value is embedded. `why` shows a cited
 * value by reading the key at that revision while the store retains it (cited.ts).
 */
export function evidenceOf(f: { key: string; kv: KeyValue }): Evidence {
  const kind = parseKey(f.key)?.kind;
  const spec = kind !== undefined && CITED_KINDS.has(kind);
  // A string's UTF-8 length is at least its length in UTF-16 units: a long one is not measured.
  const max = DECISION_LIMITS.embedMaxBytes;
  if (!spec && f.kv.value.length <= max && utf8Length(f.kv.value) <= max) {
    return { key: f.key, modRevision: f.kv.modRevision, value: f.kv.value };
  }
  return citedEvidence(f.key, f.kv.modRevision, redactStoredValue(f.key, f.kv.value));
}

/**
 * Evidence citing what a key held (key, mod revision, hash, size) whatever its size: for a
 * value many decisions of one step read alike (a node's record, under every placement on
 * the node), so it is hashed once and no decision repeats it.
 */
export function citeOf(f: { key: string; kv: KeyValue }): Evidence {
  return citedEvidence(f.key, f.kv.modRevision, redactStoredValue(f.key, f.kv.value));
}

/** Evidence citing a value (already redacted) by its hash instead of embedding it. */
export function citedEvidence(key: string, modRevision: number, redacted: string): Evidence {
  const { hex, bytes } = sha256OfText(redacted);
  return { key, modRevision, value: '', hash: `sha256:${hex}`, bytes };
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

/** Evidence built by hand (not through evidenceOf) with a large value is cited all the same. */
function boundedEvidence(e: Evidence): Evidence {
  if (e.value === '' || utf8Length(e.value) <= DECISION_LIMITS.embedMaxBytes) return e;
  return citedEvidence(e.key, e.modRevision, redactStoredValue(e.key, e.value));
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
  // Clipped to DECISION_LIMITS, so decisionMaxBytes() (bounds.ts) holds for any input.
  const decision: Decision = {
    id: key.slice(key.lastIndexOf('/') + 1),
    kind: d.kind,
    subject: d.subject,
    controller: clipText(d.controller, DECISION_LIMITS.maxControllerChars),
    action: clipText(d.action),
    at: d.at,
    evidence: d.evidence.slice(0, DECISION_LIMITS.maxEvidence).map(boundedEvidence),
    cause: d.cause,
    reasons: d.reasons.slice(0, DECISION_LIMITS.maxReasons).map((r) => clipText(r)),
    ...(d.basis !== undefined ? { basis: clipText(d.basis) } : {}),
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
