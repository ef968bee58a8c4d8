import { limits } from '../../db/keyspace.js';

/**
 * The size rules of a decision record, so every decision fits the store's value limit for any
 * valid spec (issue 20: a bound by construction, not by the accident of sizes). Evidence
 * embeds a value only when it is small and holds no spec; everything else is cited by key,
 * revision and hash (record.ts). `decide` clips reasons and evidence to these counts.
 */
export const DECISION_LIMITS = {
  /** A read value up to this many UTF-8 bytes is embedded; a larger one is cited. */
  embedMaxBytes: 1024,
  /** Evidence items per decision (controllers cite at most 32 of a list, plus a few keys). */
  maxEvidence: 64,
  /** Reasons per decision. */
  maxReasons: 16,
  /** Characters per reason, action or basis (longer ones end with "…"). */
  maxTextChars: 1024,
  /** Characters of the controller name. */
  maxControllerChars: 64,
} as const;

/** Key kinds whose values hold a whole service spec: always cited, whatever their size. */
export const CITED_KINDS: ReadonlySet<string> = new Set(['service', 'assigned']);

/**
 * The most UTF-8 bytes `JSON.stringify` of a string of `units` UTF-16 code units can take:
 * a control character becomes `\uXXXX` (6 bytes), nothing takes more, plus the quotes.
 */
export const jsonStringMaxBytes = (units: number): number => 6 * units + 2;

/** Field names, numbers, brackets and the `sha256:` hash of one evidence item, generously. */
const EVIDENCE_OVERHEAD = 256;
/** The same for the decision's own fields besides the strings counted below. */
const DECISION_OVERHEAD = 512;

/** The most bytes one evidence item can take (a store key is at most limits.maxKeyBytes). */
export function evidenceMaxBytes(): number {
  return EVIDENCE_OVERHEAD + jsonStringMaxBytes(limits.maxKeyBytes) + jsonStringMaxBytes(DECISION_LIMITS.embedMaxBytes);
}

/**
 * The most bytes a decision record can take, for any input: id, subject and cause are
 * (parts of) store keys; action and basis are clipped texts; evidence and reasons are
 * clipped in number and size. A test holds this under the store's value limit.
 */
export function decisionMaxBytes(): number {
  const key = jsonStringMaxBytes(limits.maxKeyBytes);
  const text = jsonStringMaxBytes(DECISION_LIMITS.maxTextChars);
  return (
    DECISION_OVERHEAD +
    3 * key +
    jsonStringMaxBytes(DECISION_LIMITS.maxControllerChars) +
    2 * text +
    DECISION_LIMITS.maxEvidence * (evidenceMaxBytes() + 1) +
    DECISION_LIMITS.maxReasons * (text + 1)
  );
}

/** A text cut to `max` characters, marked with "…" when it was cut. */
export function clipText(s: string, max: number = DECISION_LIMITS.maxTextChars): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
