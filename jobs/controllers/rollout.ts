import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { makeDiagnostic } from '../../core/diagnostics/error.js';
import type { Rollout } from '../../core/model/facts.js';
import { formatDuration } from '../../core/model/quantity.js';
import { desiredReplicas, rolloutChanges } from '../../core/model/resolve.js';
import { templateHash } from '../../core/model/template.js';
import { endedBadly, endedText } from '../../core/model/replica-outcome.js';
import type { Compare, Store } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { absentEvidence, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { deleteKey, getFact, listFacts, putFact, unchanged, uniqueCompares, servicesUnder } from '../facts.js';
import { serviceOfKey } from '../ids.js';
import { admissibleObservation, isCompleted, readReplicaStates, type ReplicaState } from './replica-state.js';
import { isReadyReplica, splitByTemplate, templateOfReplica } from './rollout-state.js';
import { commit as commitWrite, type Write } from '../write.js';
import { retrySoon } from '../retry.js';
import { onlyUsageMoved } from './usage-report.js';

export const ROLLOUT_CONTROLLER = 'rollout';

/** Replica records compared by a rollout write: room under 128 for the spec, the rollout and a decision. */
const MAX_RECORD_COMPARES = 100;

/**
 * The rollout controller: the single writer of `/rollouts/<service>`, one step per service.
 * It tracks the service's latest roll (the replica controller performs it, see
 * replica-roll.ts): started when live replicas run a template other than the spec's,
 * complete when none do and the new ones are all ready, stuck when the new ones make no
 * progress (no more of them ready) for the spec's `update.progressDeadlineMs` — then the
 * replica controller pauses the roll and the reason names what the new replicas' agents
 * report. Start, completion, stuck and resumption are decisions; count updates are not.
 */
export const rolloutController: Controller = {
  name: ROLLOUT_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('replica'), prefixOf('placement'), prefixOf('observed'), prefixOf('rollout'), prefixOf('nodeStatus'), prefixOf('autoscale')],
  // A report that moved only its usage figure changes nothing it decides on.
  ignores: onlyUsageMoved,
  // A node's readiness change concerns every service (its counts may change).
  subjectOf: serviceOfKey,
  subjects: (store: Store) => servicesUnder(store, [prefixOf('service'), prefixOf('rollout')]),
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    if (ctx.subject === undefined) return {};
    return reconcileRollout(ctx, ctx.subject);
  },
};

async function reconcileRollout(ctx: StepContext, service: string): Promise<Wakeup> {
  const { store, now } = ctx;
  const key = buildKey('rollout', service);
  const [spec, rollout, intent] = await Promise.all([getFact(store, 'service', service), getFact(store, 'rollout', service), getFact(store, 'autoscale', service)]);
  if (!spec) {
    if (!rollout) return {};
    return commit(store, { compares: [unchanged(rollout), unchanged(undefined, buildKey('service', service))], ops: [deleteKey(key)] }, now);
  }
  const records = await listFacts(store, 'replica', prefixOf('replica', service));
  const target = templateHash(spec.value);
  // Decided from the records and the rollout alone, before reading every replica's facts
  // (a step per report of a large service): a complete roll to this template stays so, and
  // with no roll recorded and every live record made from this template there is none.
  const r0 = rollout?.value;
  if (r0 && r0.toTemplate === target && r0.state === 'complete') return {};
  if (!r0 && records.every((f) => f.value.desired !== 'run' || f.value.retired || f.value.template === target)) return {};
  const states: ReplicaState[] = await readReplicaStates(store, records);
  const completed = states.filter(isCompleted).length;
  const desired = Math.max(0, desiredReplicas(spec.value, intent?.value.desired) - completed);
  const { fresh, old } = splitByTemplate(states, target);
  const freshReady = fresh.filter(isReadyReplica);
  const counts = { desired, newReady: freshReady.length, newLive: fresh.length, oldLive: old.length };
  const deadlineMs = spec.value.update.progressDeadlineMs;
  const r = rollout?.value;
  // The records (the counts) are compared while they fit one txn (128 compares). Above that the
  // record is bookkeeping read at one revision: this controller wakes on every record change and
  // writes the counts again, and "complete" needs no old record left, which only a new spec
  // (compared) can bring back (docs/rollouts.md).
  const recordReads = states.length <= MAX_RECORD_COMPARES ? states.map((s) => unchanged(s.record)) : [];
  const readSet: Compare[] = [unchanged(spec), unchanged(rollout, key), ...recordReads];
  const evidence = [evidenceOf(spec), rollout ? evidenceOf(rollout) : absentEvidence(key)];

  if (!r || r.toTemplate !== target) {
    if (old.length === 0 && !r) return {}; // a first deployment is not a roll
    // A new roll, or (no old replicas left: the spec came back to what runs) one with nothing to replace.
    const from = mostCommon(old.map((s) => templateOfReplica(s) ?? ''));
    const fromRevision = Math.max(0, ...old.filter((s) => templateOfReplica(s) === from).map((s) => s.record.value.specRevision));
    const oldSpec = old.find((s) => s.assignment)?.assignment?.value.spec;
    const changed = oldSpec ? rolloutChanges(oldSpec, spec.value) : [];
    const done = old.length === 0 && counts.newReady >= desired;
    const next: Rollout = {
      service,
      fromRevision: old.length > 0 ? fromRevision : (r?.toRevision ?? 0),
      toRevision: spec.kv.modRevision,
      state: done ? 'complete' : 'progressing',
      startedAt: now,
      reason: '',
      fromTemplate: old.length > 0 ? from : (r?.toTemplate ?? ''),
      toTemplate: target,
      ...counts,
      progressAt: now,
      progressDeadlineMs: deadlineMs,
      ...(done ? { finishedAt: now } : {}),
    };
    const d = decide({
      kind: 'service',
      subject: service,
      controller: ROLLOUT_CONTROLLER,
      // Actions are fixed words (retention keeps the newest of each); the details are reasons.
      action: done ? 'rollout complete' : 'rollout started',
      tag: done ? 'ro-complete' : 'ro-start',
      at: now,
      evidence,
      cause: causedByFact(spec),
      reasons: [
        done ? `nothing to replace: revision ${next.toRevision}` : `revision ${next.fromRevision} → ${next.toRevision}`,
        old.length > 0 ? `${old.length} live replica(s) run template ${from}, the spec's is ${target}${changed.length > 0 ? ` (changed: ${changed.join(', ')})` : ''}` : `every live replica already runs template ${target}`,
        `deadline: ${formatDuration(deadlineMs)} without progress`,
      ],
    });
    const w = await commit(store, { compares: [...readSet, ...d.compares], ops: [putFact('rollout', [service], next), ...d.ops] }, now);
    return done ? w : { at: w.at ?? now + deadlineMs };
  }

  if (r.state === 'complete') return {}; // final until the template changes again
  const progressed = counts.newReady > r.newReady;
  const progressAt = progressed ? now : r.progressAt;
  const base: Rollout = { ...r, ...counts, progressAt, progressDeadlineMs: deadlineMs };
  if (old.length === 0 && counts.newReady >= desired) {
    const d = decide({
      kind: 'service',
      subject: service,
      controller: ROLLOUT_CONTROLLER,
      action: 'rollout complete',
      tag: 'ro-complete',
      at: now,
      evidence,
      cause: causedByFact(spec),
      reasons: [`revision ${r.toRevision}: ${counts.newReady}/${desired} new replicas ready, no old replica left`],
    });
    return commit(store, { compares: [...readSet, ...d.compares], ops: [putFact('rollout', [service], { ...base, state: 'complete', reason: '', finishedAt: now }), ...d.ops] }, now);
  }
  if (r.state === 'stuck' && progressed) {
    const d = decide({
      kind: 'service',
      subject: service,
      controller: ROLLOUT_CONTROLLER,
      action: 'rollout resumed',
      tag: 'ro-resume',
      at: now,
      evidence,
      cause: causedByFact(spec),
      reasons: [`${counts.newReady}/${desired} new replicas ready now (${r.newReady} when it was stuck)`],
    });
    const w = await commit(store, { compares: [...readSet, ...d.compares], ops: [putFact('rollout', [service], { ...base, state: 'progressing', reason: '' }), ...d.ops] }, now);
    return { at: w.at ?? now + deadlineMs };
  }
  const reason = r.state === 'stuck' || now >= progressAt + deadlineMs ? await stuckReason(store, fresh.filter((s) => !freshReady.includes(s)), states, target, counts) : '';
  if (r.state === 'progressing' && now >= progressAt + deadlineMs) {
    const diagnostic = makeDiagnostic('CCA-E0410', { service, revision: r.toRevision, deadline: formatDuration(deadlineMs), reason });
    const d = decide({
      kind: 'service',
      subject: service,
      controller: ROLLOUT_CONTROLLER,
      action: 'rollout stuck',
      tag: 'ro-stuck',
      at: now,
      evidence,
      cause: causedByFact(spec),
      reasons: [reason, `no new replica became ready for ${formatDuration(now - progressAt)} (deadline ${formatDuration(deadlineMs)})`, `${diagnostic.code} ${diagnostic.message}`],
    });
    return commit(store, { compares: [...readSet, ...d.compares], ops: [putFact('rollout', [service], { ...base, state: 'stuck', reason }), ...d.ops] }, now);
  }
  // Bookkeeping only: counts (and a stuck roll's reason) as they are now.
  const next: Rollout = { ...base, ...(r.state === 'stuck' ? { reason } : {}) };
  const w = JSON.stringify(next) === JSON.stringify(r) ? {} : await commit(store, { compares: readSet, ops: [putFact('rollout', [service], next)] }, now);
  if (w.at !== undefined) return w;
  return r.state === 'progressing' ? { at: progressAt + deadlineMs } : {};
}

async function commit(store: Store, w: Write, now: number): Promise<Wakeup> {
  return (await commitWrite(store, { compares: uniqueCompares(w.compares), ops: w.ops })) ? {} : retrySoon(now);
}

function mostCommon(items: readonly string[]): string {
  const n = new Map<string, number>();
  for (const i of items) n.set(i, (n.get(i) ?? 0) + 1);
  return [...n.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0] ?? '';
}

/**
 * "2/3 new replicas not ready: readiness failing on n1 (×2); init step migrate failed with
 * code 1 on n2": the count, then what the agents report of each new replica that is not
 * ready (and of new ones retired since, whose record keeps the exit), grouped.
 */
async function stuckReason(store: Store, unready: readonly ReplicaState[], all: readonly ReplicaState[], target: string, c: { desired: number; newReady: number; newLive: number }): Promise<string> {
  const parts: string[] = [];
  for (const s of unready) parts.push(await describeNotReady(store, s));
  for (const s of all) {
    const rec = s.record.value;
    // New replicas that ended by themselves or with their node (not ones stopped on purpose).
    if (rec.template === target && rec.ended && endedBadly(rec)) parts.push(`a replica ${endedText(rec.ended)}`);
  }
  if (c.newLive < c.desired) parts.push(`${c.desired - c.newLive} not created yet (the roll waits for the others)`);
  const grouped = new Map<string, number>();
  for (const p of parts) grouped.set(p, (grouped.get(p) ?? 0) + 1);
  const text = [...grouped].map(([p, n]) => (n > 1 ? `${p} (×${n})` : p)).join('; ');
  return `${Math.max(0, c.desired - c.newReady)}/${c.desired} new replicas not ready${text ? `: ${text}` : ''}`;
}

export async function describeNotReady(store: Store, s: ReplicaState): Promise<string> {
  if (!s.placement) {
    const kv = (await store.range({ prefix: prefixOf('decision', 'replica', s.record.value.id), reverse: true, limit: 1 })).kvs[0];
    const d = kv ? decodeFact('decision', kv.key, kv.value) : undefined;
    return d?.action === 'pending' && d.reasons[0] ? `not placed: ${d.reasons[0]}` : 'not placed yet';
  }
  return describeObservation(s);
}

/** What an agent's admissible observation says about why a replica is not ready. */
export function describeObservation(s: ReplicaState): string {
  const node = s.placement?.value.node ?? '?';
  const obs = admissibleObservation(s);
  if (!obs) {
    if (s.status && s.status.value.state !== 'ready') return `node ${node} is ${s.status.value.state}`;
    return `no report yet from ${node}`;
  }
  const o = obs.value;
  const code = o.exitCode !== undefined ? ` with code ${o.exitCode}` : '';
  if (o.init?.state === 'failed') return `init step ${o.init.step} failed${o.init.exitCode !== undefined ? ` with code ${o.init.exitCode}` : ''} on ${node}`;
  if (o.diagnostic) return `${o.diagnostic.code} on ${node}: ${o.diagnostic.message}`;
  if (o.state === 'running') return o.health.readiness === 'failing' ? `readiness failing on ${node}` : `readiness not passing yet on ${node}`;
  if (o.state === 'init' && o.init) return `init step ${o.init.step} ${o.init.state} on ${node}`;
  return `${o.state}${code} on ${node}`;
}

