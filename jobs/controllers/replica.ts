import { buildKey, parseKey, prefixOf } from '../../core/keys.js';
import { DEFAULTS } from '../../core/model/defaults.js';
import type { ReplicaRecord } from '../../core/model/facts.js';
import type { Compare, Op, Store } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { absent, deleteKey, getFact, listFacts, putFact, sameTenure, unchanged, type Fact } from '../facts.js';
import { newReplicaId, serviceOfReplica } from '../ids.js';
import { causedBy, causedByFact, decide, decisionKey, evidenceOf, type Cause } from '../decisions/record.js';
import { admissibleObservation, isCompleted, isLive, isRunning, readReplicaState, type ReplicaState } from './replica-state.js';

export const REPLICA_CONTROLLER = 'replica';
const RETRY_MS = 100;
/** Replicas created per step; more are created by the next step, at once. */
const MAX_CREATE = 50;

interface Txn {
  compares: Compare[];
  ops: Op[];
}

/**
 * The replica controller, one step per service: desired replicas → replica records with
 * fresh ids. Replaces replicas that exited (per restart policy) or were lost with their
 * node, always under a new id; scales up and down; stops with the grace period, then retires.
 *
 * Scale-down order (the stated rule): replicas not yet placed first, then those not
 * running, then the newest (latest created, then highest id).
 */
export const replicaController: Controller = {
  name: REPLICA_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('replica'), prefixOf('placement'), prefixOf('observed'), prefixOf('lost')],
  subjectOf(key) {
    const p = parseKey(key);
    if (!p) return undefined;
    if (p.kind === 'service' || p.kind === 'replica') return p.params.service;
    if (p.kind === 'placement' || p.kind === 'observed' || p.kind === 'lost') return serviceOfReplica(p.params.replica!);
    return undefined;
  },
  async subjects(store: Store) {
    const names = new Set<string>();
    for (const prefix of [prefixOf('service'), prefixOf('replica')]) {
      const r = await store.range({ prefix, keysOnly: true });
      for (const kv of r.kvs) {
        const p = parseKey(kv.key);
        if (p?.params.service) names.add(p.params.service);
      }
    }
    return [...names].sort();
  },
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    if (ctx.subject === undefined) return {};
    return reconcileService(ctx, ctx.subject);
  },
};

async function reconcileService(ctx: StepContext, service: string): Promise<Wakeup> {
  const { store, now } = ctx;
  const spec = await getFact(store, 'service', service);
  const records = await listFacts(store, 'replica', prefixOf('replica', service));
  const states: ReplicaState[] = [];
  for (const r of records) states.push(await readReplicaState(store, r));
  const desired = spec?.value.replicas ?? 0;
  let live = states.filter(isLive).length;
  const completed = spec ? states.filter(isCompleted).length : 0;
  const txns: Txn[] = [];
  let timer: number | undefined;
  const replaceIfShort = (cause: Cause, reason: string): ReplicaDraft | undefined => {
    if (!spec || live + completed >= desired) return undefined;
    live++;
    return draftReplica(ctx, spec, cause, reason);
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
  const scale = planScale(ctx, service, spec, states.filter((s) => !retiredNow.has(s.record.value.id)), desired - live - completed);
  if (scale) {
    txns.push(scale.txn);
    // Replicas stopped now retire when their grace runs out: wake then without waiting to be woken.
    if (scale.stopping) timer = Math.min(timer ?? Infinity, now + (spec?.value.stopGraceMs ?? DEFAULTS.stopGraceMs));
  }

  let failed = 0;
  for (const t of txns) if (!(await store.txn({ compare: t.compares, success: t.ops })).succeeded) failed++;
  if (failed > 0 || scale?.more) return { at: scale?.more && failed === 0 ? now : now + RETRY_MS };
  return timer !== undefined ? { at: timer } : {};
}

interface ReplicaDraft {
  record: ReplicaRecord;
  key: string;
  compares: Compare[];
  ops: Op[];
}

function draftReplica(ctx: StepContext, spec: Fact<'service'>, cause: Cause, reason = ''): ReplicaDraft {
  const service = spec.value.name;
  const id = newReplicaId(service, ctx.random);
  const record: ReplicaRecord = { id, service, specRevision: spec.kv.modRevision, desired: 'run', createdAt: ctx.now, retired: false, reason };
  const key = buildKey('replica', service, id);
  const d = decide({
    kind: 'replica',
    subject: id,
    controller: REPLICA_CONTROLLER,
    action: 'created',
    tag: 'rc-create',
    at: ctx.now,
    evidence: [evidenceOf(spec)],
    cause,
    reasons: [reason || `service ${service} wants ${spec.value.replicas} replica(s)`],
  });
  return { record, key, compares: [absent(key), ...d.compares], ops: [putFact('replica', [service, id], record), ...d.ops] };
}

/** The stop decision of a replica: cited by the scheduler's stop order and release. */
function stopDecision(s: ReplicaState, now: number, action: string, cause: Cause, reasons: string[], evidence = [evidenceOf(s.record)]) {
  return decide({ kind: 'replica', subject: s.record.value.id, controller: REPLICA_CONTROLLER, action, tag: 'rc-stop', at: now, evidence, cause, reasons });
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
  replaceIfShort: (cause: Cause, reason: string) => ReplicaDraft | undefined,
): Txn | undefined {
  const { now } = ctx;
  const rec = s.record.value;
  const compares: Compare[] = [unchanged(s.record), unchanged(spec, buildKey('service', rec.service))];
  let reason: string;
  let cause: Cause;
  let replace = true;
  const evidence = [evidenceOf(s.record)];
  if (s.lost && s.placement && s.lost.value.tenure === s.placement.value.tenure) {
    reason = `lost with node ${s.lost.value.node}`;
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
    // The agent's diagnostic says why (e.g. "liveness failed: …"): the reason `cca why` shows.
    const because = obs.value.diagnostic ? `: ${obs.value.diagnostic.message}` : '';
    reason = `${replace ? '' : 'completed: '}${obs.value.state}${code !== undefined ? ` with code ${code}` : ''} on ${obs.value.node} (restart ${policy})${because}`;
    cause = causedByFact(obs);
    compares.push(unchanged(obs), unchanged(s.assignment), unchanged(s.status), sameTenure(s.node!.key, s.node!.createRevision), unchanged(s.placement));
    evidence.push(evidenceOf(obs), evidenceOf(s.assignment!), evidenceOf(s.status!));
  }
  dropLive();
  const d = stopDecision(s, now, `retired: ${reason}`, cause, [reason], evidence);
  const retired: ReplicaRecord = { ...rec, desired: 'stop', stopRequestedAt: now, retired: true, reason };
  const draft = replace ? replaceIfShort(causedBy(d.key), `replaces ${rec.id} (${reason})`) : undefined;
  return {
    compares: [...compares, ...d.compares, ...(draft?.compares ?? [])],
    ops: [putFact('replica', [rec.service, rec.id], retired), ...d.ops, ...(draft?.ops ?? [])],
  };
}

function isStopped(state: string): boolean {
  return state === 'exited' || state === 'failed' || state === 'lost';
}

/** A stopping replica retires once it is observed stopped, was never placed, or its grace ran out. */
function retireStopped(s: ReplicaState, spec: Fact<'service'> | undefined, now: number): { txn: Txn } | { at: number } {
  const rec = s.record.value;
  const grace = spec?.value.stopGraceMs ?? s.assignment?.value.spec.stopGraceMs ?? DEFAULTS.stopGraceMs;
  const deadline = (rec.stopRequestedAt ?? now) + grace;
  const obs = s.observation && s.placement && s.observation.value.tenure === s.placement.value.tenure ? s.observation : undefined;
  const stopped = obs && isStopped(obs.value.state);
  let why: string;
  if (!s.placement) why = 'it was never placed';
  else if (stopped) why = `${obs.value.node} reports it ${obs.value.state}`;
  else if (s.lost) why = `lost with node ${s.lost.value.node}`;
  else if (now >= deadline) why = `the grace period of ${grace} ms ran out`;
  else return { at: deadline };
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
      ops: [putFact('replica', [rec.service, rec.id], { ...rec, retired: true, reason: rec.reason || why }), ...d.ops],
    },
  };
}

/** Scale up (new ids) or down (the stated order), or stop everything of a deleted service. */
function planScale(ctx: StepContext, service: string, spec: Fact<'service'> | undefined, states: ReplicaState[], diff: number): { txn: Txn; more: boolean; stopping?: boolean } | undefined {
  const { now } = ctx;
  const liveStates = states.filter(isLive).filter((s) => !s.lost);
  if (diff === 0 || (diff < 0 && liveStates.length === 0)) return undefined;
  const serviceKey = buildKey('service', service);
  const sd = decide({
    kind: 'service',
    subject: service,
    controller: REPLICA_CONTROLLER,
    action: !spec ? 'deleted: stopping every replica' : diff > 0 ? `scaled up by ${diff}` : `scaled down by ${-diff}`,
    tag: !spec ? 'rc-delete' : diff > 0 ? 'rc-scale-up' : 'rc-scale-down',
    at: now,
    evidence: spec ? [evidenceOf(spec)] : [],
    cause: spec ? causedByFact(spec) : causedByFact({ key: serviceKey, modRevision: 0 }),
    reasons: [spec ? `wants ${spec.value.replicas}, has ${liveStates.length} live` : 'the service was deleted'],
  });
  const compares: Compare[] = [unchanged(spec, serviceKey), ...sd.compares];
  const ops: Op[] = [...sd.ops];
  if (diff > 0 && spec) {
    const n = Math.min(diff, MAX_CREATE);
    for (let i = 0; i < n; i++) {
      const draft = draftReplica(ctx, spec, causedBy(sd.key));
      compares.push(...draft.compares);
      ops.push(...draft.ops);
    }
    return { txn: { compares, ops }, more: diff > n };
  }
  const victims = [...liveStates].sort(scaleDownOrder).slice(0, Math.min(-diff, MAX_CREATE));
  for (const s of victims) {
    const d = stopDecision(s, now, spec ? 'stopping: scaled down' : 'stopping: service deleted', causedBy(sd.key), [spec ? 'scale-down picks unplaced, then not running, then newest replicas' : 'the service was deleted']);
    compares.push(unchanged(s.record), ...d.compares);
    ops.push(putFact('replica', [s.record.value.service, s.record.value.id], { ...s.record.value, desired: 'stop', stopRequestedAt: now }), ...d.ops);
  }
  return { txn: { compares, ops }, more: -diff > victims.length, stopping: victims.length > 0 };
}

function scaleDownOrder(a: ReplicaState, b: ReplicaState): number {
  const rank = (s: ReplicaState) => (!s.placement ? 0 : !isRunning(s) ? 1 : 2);
  return rank(a) - rank(b) || b.record.value.createdAt - a.record.value.createdAt || (a.record.value.id < b.record.value.id ? 1 : -1);
}
