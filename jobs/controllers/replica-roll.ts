import { buildKey, prefixOf } from '../../core/keys.js';
import { templateHash } from '../../core/model/template.js';
import { stopByText, type StopBy } from '../../core/model/replica-outcome.js';
import type { Compare } from '../../db/store.js';
import type { StepContext } from '../controller.js';
import { absentEvidence, causedBy, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { absent, getFact, listFacts, present, putFact, sameTenure, unchanged, uniqueCompares, type Fact } from '../facts.js';
import { draftReplica, REPLICA_CONTROLLER, scaleDownOrder, stopDecision, type Why } from './replica-draft.js';
import type { Write } from '../write.js';
import type { ReplicaState } from './replica-state.js';
import { planRoll, rollBounds } from './rollout-plan.js';
import { isReadyReplica, splitByTemplate } from './rollout-state.js';
import { readyCount } from './endpoints.js';

/** Replicas created per step during a roll, in txns that fit the store's bounds; the rest next step, at once. */
export const MAX_CREATE = 250;

/**
 * Compares and ops per roll txn: the store takes 128 of each (etcd's --max-txn-ops); the
 * caller adds the autoscale intent it read.
 */
const ROLL_COMPARES = 120;
const ROLL_OPS = 120;
/** Old replicas stopped per step under the endpoint-set proof (each carries its own facts' compares). */
export const MAX_BOUNDED_STOPS = 100;
/** When the endpoint set lags the facts (shows fewer ready), look again this soon. */
const ENDPOINTS_RECHECK_MS = 1_000;

export type RollStep = { rolling: false } | { rolling: true; recheckAt?: number; step?: { txns: Write[]; more: boolean; stopping: boolean } };

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

  // Stops come first in `victims`; each one costs compares, so the bounded proof below may keep fewer.
  const unreadyOld = old.filter((s) => !oldReady.includes(s)).sort(scaleDownOrder).slice(0, plan.stopUnready);
  const readyOld = [...oldReady].sort(scaleDownOrder).slice(0, plan.stopReady);
  const rolloutKey = buildKey('rollout', service);
  const common: Compare[] = [unchanged(spec), unchanged(rollout, rolloutKey)];
  const nodeOpOf = (s: ReplicaState): Compare[] => (s.placement ? [unchanged(nodeOps.get(s.placement.value.node), buildKey('nodeOp', s.placement.value.node))] : []);
  // The exact proof: every live record (the counts), each one's node's drain intent (old or
  // new), and every fact that made a replica count as ready (the availability bound).
  const exact: Compare[] = [];
  for (const s of [...fresh, ...old]) exact.push(...nodeOpOf(s), unchanged(s.record));
  if (plan.stopReady > 0) for (const s of [...freshReady, ...oldReady]) exact.push(...readinessCompares(s));
  // An old replica stopped as not ready must still be not ready at commit (else the stop
  // would cost availability the plan did not count): its facts, or its absent placement.
  for (const s of unreadyOld) exact.push(...readinessCompares(s));
  const victimCost = (s: ReplicaState) => [...nodeOpOf(s), ...readinessCompares(s)];
  const exactFits = uniqueCompares([...common, ...exact]).length + 2 * (unreadyOld.length + readyOld.length) + 2 <= ROLL_COMPARES;

  let bounded: { endpoints: Compare; readyStops: number; short: boolean } | undefined;
  if (!exactFits) {
    // Too many facts for one txn (etcd allows 128 compares): the availability bound is proved
    // against the service's endpoint set instead, the ready replicas the endpoint controller
    // publishes (jobs/controllers/endpoints.ts, rewritten in the step after any of those facts
    // change). It must show enough ready replicas for the stops, is compared unchanged, and
    // each stopped replica's own facts are still compared (docs/rollouts.md).
    const ep = await getFact(store, 'endpoints', service);
    const listedReady = readyCount(ep?.value);
    const readyStops = Math.min(readyOld.length, Math.max(0, listedReady - plan.minReady));
    bounded = { endpoints: unchanged(ep, buildKey('endpoints', service)), readyStops, short: readyStops < readyOld.length };
  }
  const victims = [...unreadyOld, ...readyOld.slice(0, bounded ? bounded.readyStops : readyOld.length)].slice(0, bounded ? MAX_BOUNDED_STOPS : undefined);
  const create = Math.min(plan.create, MAX_CREATE);
  if (create + victims.length === 0) return { rolling: true, ...(bounded?.short ? { recheckAt: now + ENDPOINTS_RECHECK_MS } : {}) };
  const stoppedReady = victims.filter((s) => readyOld.includes(s)).length;
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
      ...(bounded ? [`availability proved by the endpoint set (too many replicas to compare each one's facts in one txn): ${stoppedReady} ready stopped`] : []),
      ...(drains.length > 0 ? [`${drained.length} replica(s) on draining node ${drains.join(', ')} are replaced elsewhere`] : []),
    ],
  });
  const readyAfter = counts.newReady + counts.oldReady - stoppedReady;
  const stopOps = (s: ReplicaState): Write => {
    const node = drainingNode(s);
    const stopBy: StopBy = node !== undefined && drained.includes(s) ? { by: 'drain', node } : { by: 'rollout' };
    const by = stopByText(stopBy);
    const reason = readyOld.includes(s)
      ? `replaced by the ${by}: ${readyAfter} replica(s) stay ready, at least ${plan.minReady} must`
      : `replaced by the ${by}: not ready, so stopping it costs no availability`;
    const d = stopDecision(s, now, `stopping: ${by}`, causedBy(sd.key), [reason]);
    return {
      compares: [unchanged(s.record), ...d.compares],
      ops: [putFact('replica', [s.record.value.service, s.record.value.id], { ...s.record.value, desired: 'stop', stopRequestedAt: now, reason: '', stopBy, ...(drained.includes(s) ? { drained: true } : {}) }), ...d.ops],
    };
  };
  // The first txn writes the roll's decision with the proof; later ones (more stops under the
  // bounded proof, then creates) compare that decision present and commit only after it.
  const first: Write = { compares: [...common, ...sd.compares, ...(bounded ? [bounded.endpoints] : exact)], ops: [...sd.ops] };
  const txns: Write[] = [first];
  const fits = (w: Write, add: Write) => uniqueCompares([...w.compares, ...add.compares]).length <= ROLL_COMPARES && w.ops.length + add.ops.length <= ROLL_OPS;
  const place = (add: Write, later: () => Write) => {
    let w = txns[txns.length - 1]!;
    if (!fits(w, add)) {
      w = later();
      txns.push(w);
    }
    w.compares.push(...add.compares);
    w.ops.push(...add.ops);
  };
  // (The exact proof fits one txn with its stops, so only the bounded one reaches a later stop txn.)
  const laterStops = (): Write => ({ compares: [...common, present(sd.key), ...(bounded ? [bounded.endpoints] : exact)], ops: [] });
  const laterCreates = (): Write => ({ compares: [...common, present(sd.key)], ops: [] });
  for (const s of victims) {
    const stop = stopOps(s);
    place(bounded ? { compares: [...victimCost(s), ...stop.compares], ops: stop.ops } : stop, laterStops);
  }
  for (let i = 0; i < create; i++) {
    const d = draftReplica(ctx, spec, causedBy(sd.key), why);
    place(d, laterCreates);
  }
  for (const w of txns) w.compares = uniqueCompares(w.compares);
  const recheck = bounded?.short ? { recheckAt: now + ENDPOINTS_RECHECK_MS } : {};
  return { rolling: true, ...recheck, step: { txns, more: plan.create > create || (bounded !== undefined && victims.length < unreadyOld.length + bounded.readyStops), stopping: victims.length > 0 } };
}

function indexNodeOps(ops: readonly Fact<'nodeOp'>[]): Map<string, Fact<'nodeOp'>> {
  return new Map(ops.map((o) => [o.value.node, o]));
}
