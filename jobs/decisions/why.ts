import { CcaError } from '../../core/diagnostics/error.js';
import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import type { Decision, Repeat } from '../../core/model/facts.js';
import type { Store } from '../../db/store.js';
import { citedText, readAllCited, type CitedValue } from './cited.js';
import type { DecisionKind } from './record.js';

export interface ChainLink {
  key: string;
  decision: Decision;
}

export interface WhyAnswer {
  kind: DecisionKind;
  name: string;
  /** The subject's recent decisions, newest first. */
  history: ChainLink[];
  /** From the newest decision back along its causes. */
  chain: ChainLink[];
  /** complete: the chain reached a terminal fact; truncated: a link is missing (evicted, or too long). */
  complete: boolean;
  /** The terminal: a desired key or an observed fact, at the revision the decision cited. */
  terminal?: { fact: string; modRevision: number; current?: string };
  /** Why the chain stops short, when it does. */
  truncated?: string;
  /** The decision the chain needed that retention evicted, when that is why it stops short. */
  evicted?: string;
  /** Repetition summaries about this subject (never part of the chain). */
  repeats: { controller: string; repeat: Repeat }[];
  /** The chain's cited evidence (values cited by hash), read at their revisions while retained. */
  cited: CitedValue[];
}

/** Decisions a `why` chain follows before it says it was truncated. */
export const MAX_CHAIN = 64;
const HISTORY = 20;
/** Controllers that write repeat summaries about subjects. */
const REPEATERS = ['scheduler', 'replica', 'node', 'auditor'];

/**
 * `cca why KIND NAME`: the newest decision about a subject, followed back cause by cause
 * to a terminal (a desired key or an observed fact), stating whether it got there. Works
 * from the decisions alone: small evidence is embedded, so it survives the keys changing or
 * being compacted; large values (specs) are cited by revision and hash, and shown as read
 * at that revision while the store retains it, or said to be compacted (`cited`).
 */
export async function why(store: Store, kind: DecisionKind, name: string): Promise<WhyAnswer> {
  // Ids sort by time; decisions made in the same millisecond are ordered by the revision
  // that committed them, which is the order they happened in.
  const r = await store.range({ prefix: prefixOf('decision', kind, name), reverse: true, limit: HISTORY * 2 });
  if (r.kvs.length === 0) throw new CcaError('CCA-E0406', { kind, name });
  const history = [...r.kvs]
    .sort((a, b) => b.modRevision - a.modRevision)
    .slice(0, HISTORY)
    .map((kv) => ({ key: kv.key, decision: decodeFact('decision', kv.key, kv.value) }));
  const answer: WhyAnswer = { kind, name, history, chain: [], complete: false, repeats: [], cited: [] };
  const seen = new Set<string>();
  let link: ChainLink | undefined = history[0];
  while (link) {
    if (seen.has(link.key)) {
      answer.truncated = `the chain loops back to ${link.key}`;
      break;
    }
    seen.add(link.key);
    answer.chain.push(link);
    if (answer.chain.length >= MAX_CHAIN) {
      answer.truncated = `the chain is longer than ${MAX_CHAIN} decisions`;
      break;
    }
    const cause: Decision['cause'] = link.decision.cause;
    if (!cause) {
      answer.truncated = `${link.key} names no cause`;
      break;
    }
    if ('fact' in cause) {
      const current = await store.get(cause.fact);
      answer.terminal = { fact: cause.fact, modRevision: cause.modRevision, ...(current ? { current: current.value } : {}) };
      answer.complete = true;
      break;
    }
    const kv = await store.get(cause.decision);
    if (!kv) {
      answer.truncated = `${cause.decision} is no longer kept (evicted by retention)`;
      answer.evicted = cause.decision;
      break;
    }
    link = { key: kv.key, decision: decodeFact('decision', kv.key, kv.value) };
  }
  answer.cited = await readAllCited(store, answer.chain.flatMap((l) => l.decision.evidence));
  for (const controller of REPEATERS) {
    const kv = await store.get(buildKey('repeat', controller, kind, name));
    if (kv) answer.repeats.push({ controller, repeat: decodeFact('repeat', kv.key, kv.value) });
  }
  return answer;
}

/** The answer as text, for the CLI and the simulation's trace. */
export function whyText(a: WhyAnswer): string {
  const lines = [`why ${a.kind} ${a.name}: ${a.complete ? 'complete' : `truncated (${a.truncated})`}`];
  for (const { decision: d } of a.chain) {
    lines.push(`  ${new Date(d.at).toISOString()} ${d.controller}: ${d.kind} ${d.subject} ${d.action}`);
    for (const r of d.reasons) lines.push(`      ${r}`);
    for (const e of d.evidence) {
      if (e.hash === undefined) continue;
      const c = a.cited.find((x) => x.key === e.key && x.modRevision === e.modRevision);
      lines.push(`      cited ${e.key} @${e.modRevision}: ${c?.state === 'retained' ? `${e.bytes ?? 0} bytes, retained` : citedText(c, e)}`);
    }
  }
  if (a.terminal) lines.push(`  ← ${a.terminal.fact} at revision ${a.terminal.modRevision}`);
  for (const r of a.repeats) lines.push(`  (${r.controller} reached its latest outcome ${r.repeat.count}× from ${r.repeat.first} to ${r.repeat.last} ms; a count, never a cause)`);
  return lines.join('\n');
}
