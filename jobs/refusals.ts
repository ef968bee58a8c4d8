import { isCcaError } from '../core/diagnostics/error.js';
import type { Diagnostic } from '../core/diagnostics/types.js';
import { decodeFact, parseKey } from '../core/keys.js';
import { sha256Hex } from '../core/sha256.js';
import type { Store, TxnRequest, TxnResponse } from '../db/store.js';
import { clipText } from './decisions/bounds.js';
import { causedByFact, decide, repeatOnce, type DecisionKind } from './decisions/record.js';
import { getFact } from './facts.js';

/**
 * A write the store refused outright — too large, a bad key or value — rather than one that
 * lost a race (a failed compare) or met an outage. Retrying it at once changes nothing.
 */
export interface Refusal {
  /** The first key the write puts or deletes: whose subject it was. */
  key: string;
  /** The store's coded reason ("CCA-E0104 the value for key … is … bytes; …"). */
  reason: string;
}

function firstKey(req: TxnRequest): string {
  const op = req.success[0];
  if (!op) return '(no operation)';
  return 'put' in op && op.put ? op.put.key : 'delete' in op && op.delete ? op.delete.key : '(unknown)';
}

/**
 * The store a step is handed: a txn the store refuses (a non-environment coded error) is set
 * aside into `refused` and answers as a write that changed nothing, so the step goes on with
 * its other subjects' writes and plans the refused one again next time, as after a lost race.
 * An outage (an environment-blamed error) still fails the step. The drivers report each
 * refusal once and back the step off (step-runner.ts, StepBook).
 */
export function guardRefusals(store: Store, refused: Refusal[]): Store {
  const txn = async (req: TxnRequest): Promise<TxnResponse> => {
    try {
      return await store.txn(req);
    } catch (e) {
      if (!isCcaError(e) || e.blame === 'environment') throw e;
      refused.push({ key: firstKey(req), reason: `${e.code} ${e.diagnostic.message}` });
      return { succeeded: false, revision: await store.revision(), responses: [] };
    }
  };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'txn') return txn;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** The repeat summary's controller segment for refusals: apart from the controller's own summaries. */
export const REFUSAL_SUMMARY = 'refused-writes';

/**
 * Whose `cca why` a refused key belongs to: the replica, service or node it names (a
 * decision's own subject for a decision key); undefined for a key about none of them.
 */
export function refusalSubject(key: string): { kind: DecisionKind; subject: string } | undefined {
  const parsed = parseKey(key);
  if (!parsed) return undefined;
  const p: Record<string, string> = parsed.params;
  if (parsed.kind === 'decision' && (p.kind === 'replica' || p.kind === 'service' || p.kind === 'node') && p.subject) return { kind: p.kind, subject: p.subject };
  if (p.replica) return { kind: 'replica', subject: p.replica };
  if (p.service) return { kind: 'service', subject: p.service };
  if (p.node) return { kind: 'node', subject: p.node };
  return undefined;
}

/**
 * Make a refusal visible where users look (`cca why <subject>`): a decision of the refusing
 * controller on the refused key's subject, with the coded diagnostic (CCA-E0450) as its
 * reason, written once: the same refusal again writes nothing. Its size is decide's bound.
 * Written on the store itself, apart from the step's writes; a failure to write it leaves
 * the refusal in the log and metrics as before.
 */
export async function recordRefusal(store: Store, controller: string, refused: Refusal, diagnostic: Diagnostic, now: number): Promise<void> {
  const who = refusalSubject(refused.key);
  if (!who) return;
  const reason = clipText(`${diagnostic.code} ${diagnostic.message}`);
  try {
    const repeat = await getFact(store, 'repeat', REFUSAL_SUMMARY, who.kind, who.subject);
    const lastKv = repeat ? await store.get(repeat.value.decision) : null;
    if (lastKv && decodeFact('decision', lastKv.key, lastKv.value).reasons[0] === reason) return;
    const d = decide({
      kind: who.kind,
      subject: who.subject,
      controller,
      action: 'write refused',
      tag: `refused-${sha256Hex(`${refused.key}\n${reason}`).slice(0, 12)}`,
      at: now,
      evidence: [],
      cause: causedByFact({ key: refused.key, modRevision: 0 }),
      reasons: [reason, `the ${controller}'s other subjects went on; this write is tried again with backoff`],
    });
    const rep = repeatOnce(REFUSAL_SUMMARY, who.kind, who.subject, d.key, repeat, now);
    await store.txn({ compare: [...d.compares, ...rep.compares], success: [...d.ops, ...rep.ops] });
  } catch (e) {
    if (isCcaError(e) && e.blame === 'environment') throw e;
  }
}
