import { buildKey, prefixOf } from '../../core/keys.js';
import { DEFAULTS } from '../../core/model/defaults.js';
import { desiredReplicas } from '../../core/model/resolve.js';
import type { ReplicaRecord } from '../../core/model/facts.js';
import { endedText, exitText, originText, stopSeenText, type ReplicaEnded, type ReplicaExit, type ReplicaOrigin } from '../../core/model/replica-outcome.js';
import type { Compare, Op, Store } from '../../db/store.js';
import { STEP_PRIORITY, type Controller, type StepContext, type Wakeup } from '../controller.js';
import { absent, deleteKey, getFact, listFacts, present, putFact, sameTenure, unchanged, type Fact, servicesUnder } from '../facts.js';
import { newReplicaId, serviceOfKey } from '../ids.js';
import { causedBy, causedByFact, decide, decisionKey, evidenceOf, type Cause } from '../decisions/record.js';
import { backoffDelay, nextAttempt } from './backoff.js';
import { admissibleObservation, isCompleted, isLive, isRunning, readReplicaStates, type ReplicaState } from './replica-state.js';
import { planRollStep } from './replica-roll.js';
import { commitEach, commitFirstThenRest, type Write } from '../write.js';
import { RETRY, retrySoon } from '../retry.js';
import { draftReplica, REPLICA_CONTROLLER, scaleDownOrder, stopDecision, type Backoff, type ReplicaDraft, type Why } from './replica-draft.js';
import { onlyUsageMoved } from './usage-report.js';

/**
 * Replicas created (or stopped by a scale-down) per step; more are created by the next
 * step, at once. Every step of a service reads the whole service, so the number of steps a
 * scale-up takes must not grow with its size: 1,000 replicas are one step.
 */
export const MAX_CREATE = 1_000;
/** Replicas created or stopped per txn: each compares two keys and writes two (the store allows 128 of each). */
export const CREATE_PER_TXN = 50;

/**
 * The replica controller, one step per service: desired replicas → replica records with
 * fresh ids. Replaces replicas that exited (per restart policy) or were lost with their
 * node, always under a new id; scales up and down; stops with the grace period, then retires.
 *
 * Scale-down order (the stated rule): replicas not yet placed first, then those not
 * running, then the newest (latest created, then highest id).
 */
export const replicaController: Controller = replicaControllerWith({});

export interface ReplicaControllerOptions {
  /**
   * A step's txns in flight at once (a scale-up of 1,000 is 20 txns): 1, the default, is
   * the simulation's order; a server pod uses more, as for the scheduler (server/start.ts).
   */
  txnConcurrency?: number;
}

export function replicaControllerWith(opts: ReplicaControllerOptions): Controller {
  const concurrency = opts.txnConcurrency ?? 1;
  return {
    name: REPLICA_CONTROLLER,
    priority: STEP_PRIORITY.replica,
    watches: [prefixOf('service'), prefixOf('replica'), prefixOf('placement'), prefixOf('observed'), prefixOf('lost'), prefixOf('autoscale'), prefixOf('rollout'), prefixOf('nodeOp')],
    // A report that moved only its usage figure changes nothing it decides on.
    ignores: onlyUsageMoved,
    subjectOf: serviceOfKey,
    subjects: (store: Store) => servicesUnder(store, [prefixOf('service'), prefixOf('replica')]),
    async reconcile(ctx: StepContext): Promise<Wakeup> {
      if (ctx.subject === undefined) return {};
      return reconcileService(ctx, ctx.subject, concurrency);
    },
  };
}

async function reconcileService(ctx: StepContext, service: string, concurrency: number): Promise<Wakeup> {
  const { store, now } = ctx;
  const spec = await getFact(store, 'service', service);
  const records = await listFacts(store, 'replica', prefixOf('replica', service));
  const states: ReplicaState[] = await readReplicaStates(store, records);
  // The autoscaler's intent, when the spec autoscales, within the spec's bounds; compared by every txn it sizes.
  const intent = spec?.value.autoscale ? await getFact(store, 'autoscale', service) : undefined;
  const intentRead: Compare[] = spec?.value.autoscale ? [unchanged(intent, buildKey('autoscale', service))] : [];
  const desired = spec ? desiredReplicas(spec.value, intent?.value.desired) : 0;
  let live = states.filter(isLive).length;
  const completed = spec ? states.filter(isCompleted).length : 0;
  const txns: Write[] = [];
  let timer: number | undefined;
  let drafted = 0;
  const replaceIfShort = (cause: Cause, why: Why, backoff?: Backoff): ReplicaDraft | undefined => {
    if (!spec || live + completed >= desired) return undefined;
    live++;
    drafted++;
    const d = draftReplica(ctx, spec, cause, why, backoff);
    d.compares.push(...intentRead);
    return d;
  };
  const retiredNow = new Set<string>();
  for (const s of states.filter(isLive)) {
    const t = retireLiveIfDone(ctx, s, spec, () => live--, replaceIfShort);
    if (t) {
      txns.push(t);
      retiredNow.add(s.record.value.id);
    }
  }
  for (const s of states) {
    if (s.record.value.desired !== 'stop' || s.record.value.retired) continue;
    const r = retireStopped(s, spec, now);
    if ('txn' in r) txns.push(r.txn);
    else timer = Math.min(timer ?? Infinity, r.at);
  }
  for (const s of states) {
    if (s.record.value.retired && !s.placement && !(spec && isCompleted(s))) {
      txns.push({ compares: [unchanged(s.record), absent(buildKey('placement', s.record.value.id))], ops: [deleteKey(s.record.key)] });
    }
  }
  const remaining = states.filter((s) => !retiredNow.has(s.record.value.id));
  // A changed template rolls (jobs/controllers/replica-roll.ts); otherwise plain scaling.
  const roll = spec ? await planRollStep(ctx, spec, remaining, desired - completed, drafted) : undefined;
  // The roll's size came from `desired` too, so it compares the autoscale intent it read.
  if (roll?.rolling && roll.step) for (const w of roll.step.txns) w.compares.push(...intentRead);
  if (roll?.rolling && roll.recheckAt !== undefined) timer = Math.min(timer ?? Infinity, roll.recheckAt);
  // A stateful replica stopped by a drain holds its replacement back until it retired (its
  // node reported the stop): placed meanwhile, the replacement would start on other data.
  const drainedStateful = spec && spec.value.volumes.length > 0 ? remaining.filter((s) => s.record.value.drained && s.record.value.desired === 'stop' && !s.record.value.retired) : [];
  const short = desired - live - completed;
  const diff = short > 0 ? Math.max(0, short - drainedStateful.length) : short;
  const rollStep = roll?.rolling ? roll.step : undefined;
  const scale = roll?.rolling ? rollStep : planScale(ctx, service, spec, remaining, diff, { desired, intent, compares: [...intentRead, ...drainedStateful.map((s) => unchanged(s.record))] });
  if (scale) {
    // Replicas stopped now retire when their grace runs out: wake then without waiting to be woken.
    if (scale.stopping) timer = Math.min(timer ?? Infinity, now + (spec?.value.stopGraceMs ?? DEFAULTS.stopGraceMs));
  }

  // Each retirement stands alone. A scale's txns come last: the later ones cite the first
  // one's decision, so they follow only if it held.
  const failed = (await commitEach(store, txns, concurrency)) + (scale ? await commitFirstThenRest(store, scale.txns, concurrency) : 0);
  if (failed > 0) return retrySoon(now);
  if (scale?.more) return { at: now };
  return timer !== undefined ? { at: timer } : {};
}

/**
 * A live replica that is lost with its node, or whose admissible observation says it
 * exited, is retired now; a replacement (new id) is created in the same txn when the
 * restart policy asks for one and the service is short.
 */
function retireLiveIfDone(
  ctx: StepContext,
  s: ReplicaState,
  spec: Fact<'service'> | undefined,
  dropLive: () => void,
  replaceIfShort: (cause: Cause, why: Why, backoff?: Backoff) => ReplicaDraft | undefined,
): Write | undefined {
  const { now } = ctx;
  const rec = s.record.value;
  const compares: Compare[] = [unchanged(s.record), unchanged(spec, buildKey('service', rec.service))];
  let ended: ReplicaEnded;
  let cause: Cause;
  let replace = true;
  let backoff: Backoff | undefined;
  const detail: string[] = [];
  const evidence = [evidenceOf(s.record)];
  if (s.lost && s.placement && s.lost.value.tenure === s.placement.value.tenure) {
    ended = { outcome: 'lost', node: s.lost.value.node };
    cause = causedBy(decisionKey('replica', rec.id, s.lost.value.at, 'node-lost'));
    compares.push(unchanged(s.lost), unchanged(s.placement));
    evidence.push(evidenceOf(s.lost));
  } else {
    const obs = admissibleObservation(s);
    // `lost`: the agent found the workload's supervisor gone and killed its group: a failure.
    if (!obs || !isStopped(obs.value.state)) return undefined;
    const code = obs.value.exitCode;
    const failed = obs.value.state !== 'exited' || (code !== undefined && code !== 0);
    const policy = spec?.value.restart ?? 'always';
    replace = policy === 'always' || (policy === 'on-failure' && failed);
    const init = obs.value.init?.state === 'failed' ? obs.value.init : undefined;
    const exit: ReplicaExit = {
      state: obs.value.state as ReplicaExit['state'],
      ...(code !== undefined ? { code } : {}),
      restart: policy,
      ...(init ? { init: { step: init.step, ...(init.exitCode !== undefined ? { code: init.exitCode } : {}), ...(init.timedOut ? { timedOut: true } : {}) } } : {}),
      // The agent's diagnostic says why (e.g. "liveness failed: …"): the reason `cca why` shows.
      ...(!init && obs.value.diagnostic ? { message: obs.value.diagnostic.message } : {}),
    };
    ended = { outcome: replace ? 'restarted' : 'completed', node: obs.value.node, exit };
    const failure = exitText(exit);
    // The step's last output lines, so `cca why` shows what failed without the evidence's full text.
    if (init) detail.push(...tailLines(init.tail).map((l) => `output: ${l}`));
    if (obs.value.diagnostic) detail.push(`${obs.value.diagnostic.code} ${obs.value.diagnostic.message}`);
    if (replace) {
      // A workload that stopped by itself (failed, or exited under `restart always`) comes
      // back with backoff, so a crash loop does not spin; the count lives on the new record.
      const attempt = nextAttempt(rec.attempt ?? 0, now - s.placement!.value.at);
      const diagnostic = init ? undefined : obs.value.diagnostic;
      backoff = { attempt, notBefore: now + backoffDelay(attempt), failure, ...(diagnostic ? { diagnostic: { code: diagnostic.code, message: diagnostic.message } } : {}) };
    }
    cause = causedByFact(obs);
    compares.push(unchanged(obs), unchanged(s.assignment), unchanged(s.status), sameTenure(s.node!.key, s.node!.createRevision), unchanged(s.placement));
    evidence.push(evidenceOf(obs), evidenceOf(s.assignment!), evidenceOf(s.status!));
  }
  dropLive();
  const reason = endedText(ended);
  const d = stopDecision(s, now, `retired: ${reason}`, cause, [reason, ...detail], evidence);
  const retired: ReplicaRecord = { ...rec, desired: 'stop', stopRequestedAt: now, retired: true, reason: '', ended };
  const draft = replace ? replaceIfShort(causedBy(d.key), { origin: { by: 'replacement' }, replaces: { replica: rec.id, ended } }, backoff) : undefined;
  return {
    compares: [...compares, ...d.compares, ...(draft?.compares ?? [])],
    ops: [putFact('replica', [rec.service, rec.id], retired), ...d.ops, ...(draft?.ops ?? [])],
  };
}

/** The last few non-empty lines of an output tail, each cut to a readable length. */
function tailLines(tail: string, n = 3): string[] {
  return tail.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '').slice(-n).map((l) => (l.length > 200 ? `…${l.slice(-200)}` : l));
}

function isStopped(state: string): boolean {
  return state === 'exited' || state === 'failed' || state === 'lost';
}

/** A stopping replica retires once it is observed stopped, was never placed, or its grace ran out. */
function retireStopped(s: ReplicaState, spec: Fact<'service'> | undefined, now: number): { txn: Write } | { at: number } {
  const rec = s.record.value;
  const grace = spec?.value.stopGraceMs ?? s.assignment?.value.spec.stopGraceMs ?? DEFAULTS.stopGraceMs;
  const deadline = (rec.stopRequestedAt ?? now) + grace;
  const obs = s.observation && s.placement && s.observation.value.tenure === s.placement.value.tenure ? s.observation : undefined;
  const stopped = obs && isStopped(obs.value.state);
  let ended: ReplicaEnded;
  if (!s.placement) ended = { outcome: 'stopped', seen: 'never-placed' };
  else if (stopped) ended = { outcome: 'stopped', node: obs.value.node, seen: 'reported', reported: obs.value.state as NonNullable<ReplicaEnded['reported']> };
  else if (s.lost) ended = { outcome: 'stopped', node: s.lost.value.node, seen: 'lost-with-node' };
  else if (rec.drained && (spec?.value.volumes.length ?? s.assignment?.value.spec.volumes.length ?? 0) > 0) return { at: Math.max(deadline, now + RETRY.proofPollMs) };
  else if (now >= deadline) ended = { outcome: 'stopped', node: s.placement.value.node, seen: 'grace-expired', graceMs: grace };
  else return { at: deadline };
  const why = stopSeenText(ended);
  const d = decide({
    kind: 'replica',
    subject: rec.id,
    controller: REPLICA_CONTROLLER,
    action: 'retired',
    tag: 'rc-retired',
    at: now,
    evidence: [evidenceOf(s.record), ...(obs ? [evidenceOf(obs)] : [])],
    cause: causedBy(decisionKey('replica', rec.id, rec.stopRequestedAt ?? rec.createdAt, 'rc-stop')),
    reasons: [why],
  });
  return {
    txn: {
      compares: [unchanged(s.record), ...(obs ? [unchanged(obs)] : []), ...d.compares],
      ops: [putFact('replica', [rec.service, rec.id], { ...rec, retired: true, reason: '', ended }), ...d.ops],
    },
  };
}

/** Scale up (new ids) or down (the stated order), or stop everything of a deleted service. */
function planScale(
  ctx: StepContext,
  service: string,
  spec: Fact<'service'> | undefined,
  states: ReplicaState[],
  diff: number,
  target: { desired: number; intent: Fact<'autoscale'> | undefined; compares: Compare[] },
): { txns: Write[]; more: boolean; stopping?: boolean } | undefined {
  const { now } = ctx;
  const liveStates = states.filter(isLive).filter((s) => !s.lost);
  if (diff === 0 || (diff < 0 && liveStates.length === 0)) return undefined;
  const serviceKey = buildKey('service', service);
  // Sized by the autoscaler's intent (unclamped): its decision is the cause; otherwise the spec is.
  const { intent } = target;
  const byIntent = intent?.value.decision !== undefined && intent.value.desired === target.desired ? intent.value.decision : undefined;
  const sd = decide({
    kind: 'service',
    subject: service,
    controller: REPLICA_CONTROLLER,
    action: !spec ? 'deleted: stopping every replica' : diff > 0 ? `scaled up by ${diff}` : `scaled down by ${-diff}`,
    tag: !spec ? 'rc-delete' : diff > 0 ? 'rc-scale-up' : 'rc-scale-down',
    at: now,
    evidence: spec ? [evidenceOf(spec), ...(intent ? [evidenceOf(intent)] : [])] : [],
    cause: byIntent ? causedBy(byIntent) : spec ? causedByFact(spec) : causedByFact({ key: serviceKey, modRevision: 0 }),
    reasons: [spec ? `wants ${target.desired}${intent ? ' (autoscaler intent)' : ''}, has ${liveStates.length} live` : 'the service was deleted'],
  });
  // The first txn writes the scale decision; each later one compares it present (it cites it)
  // and is committed only after the first succeeded (commitFirstThenRest).
  const first: Write = { compares: [unchanged(spec, serviceKey), ...target.compares, ...sd.compares], ops: [...sd.ops] };
  const later = (): Write => ({ compares: [unchanged(spec, serviceKey), ...target.compares, present(sd.key)], ops: [] });
  const txns: Write[] = [first];
  const room = (): Write => {
    const w = txns[txns.length - 1]!;
    if (w.ops.length - (w === first ? sd.ops.length : 0) < 2 * CREATE_PER_TXN) return w;
    const next = later();
    txns.push(next);
    return next;
  };
  if (diff > 0 && spec) {
    const n = Math.min(diff, MAX_CREATE);
    for (let i = 0; i < n; i++) {
      const draft = draftReplica(ctx, spec, causedBy(sd.key));
      const w = room();
      w.compares.push(...draft.compares);
      w.ops.push(...draft.ops);
    }
    return { txns, more: diff > n };
  }
  const victims = [...liveStates].sort(scaleDownOrder).slice(0, Math.min(-diff, MAX_CREATE));
  for (const s of victims) {
    const d = stopDecision(s, now, spec ? 'stopping: scaled down' : 'stopping: service deleted', causedBy(sd.key), [spec ? 'scale-down picks unplaced, then not running, then newest replicas' : 'the service was deleted']);
    const w = room();
    w.compares.push(unchanged(s.record), ...d.compares);
    w.ops.push(putFact('replica', [s.record.value.service, s.record.value.id], { ...s.record.value, desired: 'stop', stopRequestedAt: now, reason: '', stopBy: { by: spec ? 'scale-down' : 'deletion' } }), ...d.ops);
  }
  return { txns, more: -diff > victims.length, stopping: victims.length > 0 };
}
