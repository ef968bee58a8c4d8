import { buildKey, prefixOf } from '../../core/keys.js';
import { templateHash } from '../../core/model/template.js';
import { stopByText, type StopBy } from '../../core/model/replica-outcome.js';
import type { Compare, Op } from '../../db/store.js';
import type { StepContext } from '../controller.js';
import { absentEvidence, causedBy, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { absent, getFact, listFacts, putFact, sameTenure, unchanged, uniqueCompares, type Fact } from '../facts.js';
import { draftReplica, REPLICA_CONTROLLER, scaleDownOrder, stopDecision, type Why } from './replica-draft.js';
import type { Write } from '../write.js';
import type { ReplicaState } from './replica-state.js';
import { planRoll, rollBounds } from './rollout-plan.js';
import { isReadyReplica, splitByTemplate } from './rollout-state.js';

/** Replicas created per step during a roll (as for scaling); the rest next step, at once. */
const MAX_CREATE = 50;

export type RollStep = { rolling: false } | { rolling: true; step?: { txn: Write; more: boolean; stopping: boolean } };

/**
 * Every fact that decides whether a replica is ready (present ones unchanged, absent ones
 * still absent), so a stop decided on a stale count writes nothing.
 */
function readinessCompares(s: ReplicaState): Compare[] {
  const id = s.record.value.id;
  if (!s.placement) return [unchanged(s.record), absent(buildKey('placement', id))];
  const node = s.placement.value.node;
  const out: Compare[] = [
    unchanged(s.record),
    unchanged(s.placement),
    unchanged(s.assignment, buildKey('assigned', node, id)),
    unchanged(s.observation, buildKey('observed', node, id)),
    unchanged(s.status, buildKey('nodeStatus', node)),
  ];
  out.push(s.node ? sameTenure(s.node.key, s.node.createRevision) : absent(buildKey('node', node)));
  return out;
}

/**
 * One step of a rolling update, when live replicas run a template other than the spec's:
 * create new-template replicas and stop old ones as `planRoll` allows (rollout-plan.ts),
 * in one txn with one service decision. Paused while the rollout controller reports the
 * roll to this template stuck. `drafted`: replacements already created this step (new,
 * not ready). Not rolling (no old replicas): the caller scales as usual.
 */
export async function planRollStep(ctx: StepContext, spec: Fact<'service'>, states: readonly ReplicaState[], desired: number, drafted: number): Promise<RollStep> {
  const { store, now } = ctx;
  const service = spec.value.name;
  const target = templateHash(spec.value);
  const split = splitByTemplate(states, target);
  // A draining node's replicas are replaced as a roll replaces old templates: new ones
  // first (placed elsewhere: the scheduler skips the node), within the same limits.
  const nodeOps = indexNodeOps(await listFacts(store, 'nodeOp', prefixOf('nodeOp')));
  const drainingNode = (s: ReplicaState) => (s.placement && nodeOps.get(s.placement.value.node)?.value.drain ? s.placement.value.node : undefined);
  const drained = split.fresh.filter((s) => drainingNode(s) !== undefined);
  const fresh = split.fresh.filter((s) => drainingNode(s) === undefined);
  const old = [...split.old, ...drained];
  if (old.length === 0) return { rolling: false };
  const drains = [...new Set(drained.map((s) => drainingNode(s)!))].sort();
  const why: Why = { origin: split.old.length > 0 ? { by: 'rollout' } : { by: 'drain', nodes: drains } };
  const rollout = await getFact(store, 'rollout', service);
  const paused = rollout?.value.state === 'stuck' && rollout.value.toTemplate === target;
  const freshReady = fresh.filter(isReadyReplica);
  const oldReady = old.filter(isReadyReplica);
  const stateful = spec.value.volumes.length > 0;
  // A stateful replacement waits until the stopped copy has retired: placed while the old one
  // still ran, it would find the volume's node taken and start elsewhere on other data.
  const stopping = stateful ? states.filter((s) => s.record.value.desired === 'stop' && !s.record.value.retired).length : 0;
  const counts = { desired, newLive: fresh.length + drafted, newReady: freshReady.length, oldLive: old.length, oldReady: oldReady.length, stopping };
  const plan = planRoll(counts, rollBounds(spec.value.update, desired, stateful), paused);
  if (plan.create + plan.stopUnready + plan.stopReady === 0) return { rolling: true };

  const create = Math.min(plan.create, MAX_CREATE);
  const unreadyOld = old.filter((s) => !oldReady.includes(s)).sort(scaleDownOrder).slice(0, plan.stopUnready);
  const readyOld = [...oldReady].sort(scaleDownOrder).slice(0, plan.stopReady);
  const victims = [...unreadyOld, ...readyOld];
  const rolloutKey = buildKey('rollout', service);
  const did = [create > 0 ? `creating ${create} new` : '', victims.length > 0 ? `stopping ${victims.length} old` : ''].filter(Boolean).join(', ');
  const sd = decide({
    kind: 'service',
    subject: service,
    controller: REPLICA_CONTROLLER,
    action: split.old.length > 0 ? 'rolling update' : `drain of node ${drains.join(', ')}`,
    // Several roll steps can fall in one millisecond (one virtual instant in the simulation);
    // the counts they start from differ, so they name distinct decisions.
    tag: `rc-roll-n${counts.newLive}r${counts.newReady}o${counts.oldLive}r${counts.oldReady}`,
    at: now,
    evidence: [evidenceOf(spec), rollout ? evidenceOf(rollout) : absentEvidence(rolloutKey)],
    cause: causedByFact(spec),
    reasons: [
      did,
      `template ${target}: ${counts.newReady}/${desired} new ready (${counts.newLive} live), ${counts.oldLive} old live (${counts.oldReady} ready)`,
      `max surge ${plan.surge} (at most ${plan.maxLive} live), max unavailable ${plan.unavailable} (at least ${plan.minReady} ready after every stop)`,
      ...(drains.length > 0 ? [`${drained.length} replica(s) on draining node ${drains.join(', ')} are replaced elsewhere`] : []),
    ],
  });
  // Read-set: the spec, the rollout (paused or not), every live record (the counts), and
  // every fact that made a replica count as ready (the availability bound).
  const compares: Compare[] = [unchanged(spec), unchanged(rollout, rolloutKey), ...sd.compares];
  // Which replicas count as old depends on their nodes' drain intents: every one compared.
  for (const s of [...fresh, ...old]) if (s.placement) compares.push(unchanged(nodeOps.get(s.placement.value.node), buildKey('nodeOp', s.placement.value.node)));
  for (const s of [...fresh, ...old]) compares.push(unchanged(s.record));
  if (plan.stopReady > 0) for (const s of [...freshReady, ...oldReady]) compares.push(...readinessCompares(s));
  // An old replica stopped as not ready must still be not ready at commit (else the stop
  // would cost availability the plan did not count): its facts, or its absent placement.
  for (const s of unreadyOld) compares.push(...readinessCompares(s));
  const ops: Op[] = [...sd.ops];
  for (let i = 0; i < create; i++) {
    const d = draftReplica(ctx, spec, causedBy(sd.key), why);
    compares.push(...d.compares);
    ops.push(...d.ops);
  }
  const readyAfter = counts.newReady + counts.oldReady - readyOld.length;
  for (const s of victims) {
    const node = drainingNode(s);
    const stopBy: StopBy = node !== undefined && drained.includes(s) ? { by: 'drain', node } : { by: 'rollout' };
    const by = stopByText(stopBy);
    const reason = readyOld.includes(s)
      ? `replaced by the ${by}: ${readyAfter} replica(s) stay ready, at least ${plan.minReady} must`
      : `replaced by the ${by}: not ready, so stopping it costs no availability`;
    const d = stopDecision(s, now, `stopping: ${by}`, causedBy(sd.key), [reason]);
    compares.push(...d.compares);
    ops.push(putFact('replica', [s.record.value.service, s.record.value.id], { ...s.record.value, desired: 'stop', stopRequestedAt: now, reason: '', stopBy, ...(drained.includes(s) ? { drained: true } : {}) }), ...d.ops);
  }
  return { rolling: true, step: { txn: { compares: uniqueCompares(compares), ops }, more: plan.create > create, stopping: victims.length > 0 } };
}

function indexNodeOps(ops: readonly Fact<'nodeOp'>[]): Map<string, Fact<'nodeOp'>> {
  return new Map(ops.map((o) => [o.value.node, o]));
}
