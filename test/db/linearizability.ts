/**
 * A linearizability checker for histories of a versioned key-value store that reports
 * revisions, in the way etcd's robustness tests use revisions to cut porcupine's search:
 * every write that took effect has exactly one revision, so the linearization order of
 * writes is known; a read or a failed compare is placed at the revision its answer
 * carries. What remains is to prove that order is (1) a legal sequential history of the
 * model and (2) consistent with real time. Writes whose outcome is unknown (the
 * connection died during commit) are decided by the log: their unique value either
 * appears at some revision, or they never happened.
 */

export type Outcome =
  /** Answered. */
  | { kind: 'ok' }
  /** Failed before it could apply: certainly did not happen. */
  | { kind: 'failed' }
  /** Failed in a way that leaves its effect unknown: may or may not have happened. */
  | { kind: 'unknown' };

export type Operation =
  | { type: 'get'; key: string; result?: { value: string | null; modRevision: number; revision: number } }
  | { type: 'put'; key: string; value: string; result?: { revision: number } }
  | {
      type: 'cas';
      key: string;
      expectModRevision: number;
      value: string;
      result?: { succeeded: boolean; revision: number };
    };

export interface Recorded {
  client: number;
  op: Operation;
  outcome: Outcome;
  /** Monotonic times; `returned` is Infinity for an unknown outcome. */
  invoked: number;
  returned: number;
}

/** The committed history as the store's log tells it: revision → the key/value written. */
export type CommittedLog = Map<number, { key: string; value: string }>;

export interface Verdict {
  ok: boolean;
  problems: string[];
  /** How many unknown-outcome writes turned out to have happened. */
  unknownApplied: number;
  unknownLost: number;
}

const describe = (r: Recorded) => `client ${r.client} ${JSON.stringify(r.op)} [${r.invoked.toFixed(2)}, ${r.returned.toFixed(2)}]`;

export function checkHistory(history: Recorded[], log: CommittedLog, startRevision: number, endRevision: number): Verdict {
  const problems: string[] = [];
  const byValue = new Map<string, number>();
  for (const [rev, w] of log) {
    if (byValue.has(w.value)) problems.push(`value ${w.value} was committed twice (revisions ${byValue.get(w.value)} and ${rev})`);
    byValue.set(w.value, rev);
  }
  // Gap-free: every revision in the window carries exactly one of our writes.
  for (let r = startRevision + 1; r <= endRevision; r++) {
    if (!log.has(r)) problems.push(`revision ${r} is missing from the log`);
  }

  // Place each operation in the linearization: writes at (revision, 0), reads at (revision, 1).
  interface Placed {
    rec: Recorded;
    at: number;
    slot: 0 | 1;
  }
  const placed: Placed[] = [];
  let unknownApplied = 0;
  let unknownLost = 0;
  const writeAt = new Map<number, Recorded>();
  for (const rec of history) {
    const { op, outcome } = rec;
    if (outcome.kind === 'failed') {
      if (op.type !== 'get' && byValue.has(op.value)) problems.push(`a write reported as failed took effect: ${describe(rec)}`);
      continue;
    }
    if (op.type === 'get') {
      if (outcome.kind === 'ok') placed.push({ rec, at: op.result!.revision, slot: 1 });
      continue;
    }
    const committedAt = byValue.get(op.value);
    if (outcome.kind === 'unknown') {
      if (committedAt === undefined) {
        unknownLost++;
        continue;
      }
      unknownApplied++;
      writeAt.set(committedAt, rec);
      placed.push({ rec, at: committedAt, slot: 0 });
      continue;
    }
    const res = op.result!;
    const succeeded = op.type === 'put' || (op.type === 'cas' && (op.result as { succeeded: boolean }).succeeded);
    if (!succeeded) {
      if (committedAt !== undefined) problems.push(`a failed compare still wrote its value at ${committedAt}: ${describe(rec)}`);
      placed.push({ rec, at: res.revision, slot: 1 });
      continue;
    }
    if (committedAt === undefined) {
      // An idempotent put of the value a key already had writes nothing; our values are unique, so this is a loss.
      problems.push(`an acknowledged write is not in the log: ${describe(rec)}`);
      continue;
    }
    if (committedAt !== res.revision) problems.push(`write acknowledged at ${res.revision} but logged at ${committedAt}: ${describe(rec)}`);
    writeAt.set(committedAt, rec);
    placed.push({ rec, at: committedAt, slot: 0 });
  }
  for (const [rev, w] of log) {
    if (!writeAt.has(rev)) problems.push(`revision ${rev} (${w.key}=${w.value}) was written by no recorded operation`);
  }

  // (1) Sequential legality: replay the log and check every read and compare at its place.
  const state = new Map<string, { value: string; modRevision: number }>();
  const sorted = [...placed].sort((a, b) => a.at - b.at || a.slot - b.slot);
  let applied = startRevision;
  for (const p of sorted) {
    while (applied < p.at - (p.slot === 0 ? 1 : 0)) {
      applied++;
      const w = log.get(applied);
      if (w) state.set(w.key, { value: w.value, modRevision: applied });
    }
    const { op } = p.rec;
    const cur = state.get(op.key);
    if (op.type === 'get') {
      const want = cur ? { value: cur.value, modRevision: cur.modRevision } : { value: null, modRevision: 0 };
      if (want.value !== op.result!.value || want.modRevision !== op.result!.modRevision) {
        problems.push(`read at revision ${p.at} saw ${JSON.stringify(op.result)} but the state was ${JSON.stringify(want)}: ${describe(p.rec)}`);
      }
    } else if (op.type === 'cas') {
      const holds = (cur?.modRevision ?? 0) === op.expectModRevision;
      const wrote = p.slot === 0;
      if (holds !== wrote) {
        problems.push(`compare modRevision=${op.expectModRevision} at revision ${p.at} should have ${holds ? 'held' : 'failed'} (it was ${cur?.modRevision ?? 0}): ${describe(p.rec)}`);
      }
    }
  }

  // (2) Real time: if A returned before B was invoked, A is placed no later than B.
  const order = (p: Placed) => p.at * 2 + p.slot;
  const byInvoke = [...placed].sort((a, b) => a.rec.invoked - b.rec.invoked);
  const byReturn = [...placed].sort((a, b) => a.rec.returned - b.rec.returned);
  let j = 0;
  let latest: Placed | undefined;
  for (const b of byInvoke) {
    while (j < byReturn.length && byReturn[j]!.rec.returned < b.rec.invoked) {
      const a = byReturn[j++]!;
      if (!latest || order(a) > order(latest)) latest = a;
    }
    if (latest && order(latest) > order(b)) {
      problems.push(`real-time order broken: ${describe(latest.rec)} finished before ${describe(b.rec)} began, yet is placed after it`);
    }
  }
  return { ok: problems.length === 0, problems: problems.slice(0, 20), unknownApplied, unknownLost };
}
