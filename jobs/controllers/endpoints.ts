import { buildKey, prefixOf } from '../../core/keys.js';
import type { Endpoints, Observation } from '../../core/model/facts.js';
import { replicaReason } from '../../core/model/replica-outcome.js';
import type { Compare, KeyValue, Op, Store } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { absent, deleteKey, getFact, listFacts, putFact, unchanged, type Fact, servicesUnder } from '../facts.js';
import { serviceOfKey } from '../ids.js';
import { absentEvidence, causedBy, causedByFact, decide, decisionKey, evidenceOf, type Cause, type Evidence } from '../decisions/record.js';
import { admissibleObservation, readReplicaStates, type ReplicaState } from './replica-state.js';
import { digest } from './view.js';
import { retrySoon } from '../retry.js';
import { decodeMemo } from '../decode-memo.js';
import { utf8Bytes } from '../write.js';
import { DECISION_LIMITS } from '../decisions/bounds.js';
import { onlyUsageMoved } from './usage-report.js';

export const ENDPOINT_CONTROLLER = 'endpoints';
/**
 * Compares per txn (the store's per-branch limit). A txn of the chain spends three on itself
 * (the set, the spec, its decision's absence); each join or leave six on the keys its standing
 * was read from, of which its node's registration and status are shared by every change on
 * that node: so changes go in node order and a txn takes as many as fit.
 */
const MAX_COMPARES = 128;
const OWN_COMPARES = 3;
/** Txns per step; a larger change continues in the next step, at once. */
const MAX_TXNS = 64;
/** Where replicas are reached when neither the observation nor the node names an address (host networking). */
export const DEFAULT_ADDRESS = '127.0.0.1';
/**
 * The published set's bound, by construction: entries are listed by replica id while their
 * JSON fits `listedBytes` (one entry larger than that alone is never listed), so the record
 * stays under the store's value limit and, with its decision, under etcd's request limit
 * (puts travel twice: db/etcd/txn.ts) for any service. `ready` counts every ready replica.
 */
export const ENDPOINT_LIMITS = { listedBytes: 524_288 } as const;

export type Endpoint = Endpoints['endpoints'][number];

/**
 * Ready replicas of a service as `/endpoints/<service>` last published them: what the
 * `after = [...]` ordering and rollouts compare (read the one key, compare its mod revision).
 */
export function readyCount(value: Pick<Endpoints, 'endpoints' | 'ready'> | undefined): number {
  return value?.ready ?? value?.endpoints.length ?? 0;
}

/** The entries published of a sorted ready set: by replica id, while they fit ENDPOINT_LIMITS. */
export function listed(ready: readonly Endpoint[]): Endpoint[] {
  const out: Endpoint[] = [];
  let bytes = 0;
  for (const e of ready) {
    const b = utf8Bytes(JSON.stringify(e)) + 1;
    if (bytes + b > ENDPOINT_LIMITS.listedBytes) break;
    out.push(e);
    bytes += b;
  }
  return out;
}

/** Is this replica's admissible observation one a client may be sent to? Pure: running, liveness not failing, ready (or no readiness check). */
export function servesTraffic(obs: Pick<Observation, 'state' | 'health'>, hasReadinessCheck: boolean): boolean {
  if (obs.state !== 'running' || obs.health.liveness === 'failing') return false;
  return hasReadinessCheck ? obs.health.readiness === 'passing' : true;
}

/** One replica's standing: in the set (with its address), or out, and why in words. */
interface Standing {
  replica: string;
  /** Where it is placed (changes on one node share their node's compares and one reason). */
  node?: string;
  endpoint?: Endpoint;
  why: string;
  cause: Cause;
  evidence: Evidence[];
  /** The keys the standing was read from (present or absent), compared when it changes. */
  readSet: Compare[];
}

/**
 * The endpoint controller, one step per service: publishes `/endpoints/<service>`, the
 * replicas that are running and ready (readiness passing, or running when the service has
 * no readiness check) under the admissible-observation rule — current placement, the
 * node's current tenure, a ready node. It wakes on every key that rule reads, so a replica
 * whose readiness fails leaves on the step after the agent reports it, and a node whose
 * lease expires (its `/nodes/` key deleted, ending the tenure) takes its replicas out at
 * once, before the node controller even marks it lost. Writes only when the set changes,
 * each change with a `service` decision naming who joined or left and why.
 */
export const endpointController: Controller = {
  name: ENDPOINT_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('replica'), prefixOf('placement'), prefixOf('assigned'), prefixOf('observed'), prefixOf('node'), prefixOf('nodeStatus'), prefixOf('endpoints')],
  // A report that moved only its usage figure changes nothing it decides on.
  ignores: onlyUsageMoved,
  // A node's registration or status concerns every service with a replica there.
  subjectOf: serviceOfKey,
  subjects: (store: Store) => servicesUnder(store, [prefixOf('service'), prefixOf('endpoints')]),
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    if (ctx.subject === undefined) return {};
    return reconcileService(ctx, ctx.subject);
  },
};

/** Each replica's state right now and its entry when it serves traffic (`endpointOf`). */
async function readEndpointStates(store: Store, service: string): Promise<{ spec?: Fact<'service'>; states: { state: ReplicaState; endpoint?: Endpoint }[] }> {
  const spec = await getFact(store, 'service', service);
  const records = await listFacts(store, 'replica', prefixOf('replica', service));
  const states = (await readReplicaStates(store, records)).map((state) => {
    const endpoint = endpointOf(state);
    return endpoint ? { state, endpoint } : { state };
  });
  return { ...(spec ? { spec } : {}), states };
}

/** A replica's full standing (its words, cause, evidence and read set): only for those that join or leave. */
function standingFor(s: ReplicaState): Standing {
  return { ...standingOf(s), ...(s.placement ? { node: s.placement.value.node } : {}), readSet: readSetOf(s) };
}

async function reconcileService(ctx: StepContext, service: string): Promise<Wakeup> {
  const { store, now } = ctx;
  const current = await getFact(store, 'endpoints', service);
  const { spec, states } = await readEndpointStates(store, service);
  const ready = spec ? states.flatMap((s) => (s.endpoint ? [s.endpoint] : [])).sort(byReplica) : [];
  const next = listed(ready);
  const before = current?.value.endpoints ?? [];
  if (current && spec && sameSet(before, next) && readyCount(current.value) === ready.length) return {};
  if (!current && spec && ready.length === 0) return {}; // nothing published yet and nothing to publish
  if (!current && !spec) return {};

  const was = new Map(before.map((e) => [e.replica, e]));
  const now_ = new Map(next.map((e) => [e.replica, e]));
  const changes: Standing[] = [];
  // A large service's step judges every replica but words only the few that changed.
  for (const { state } of states) {
    const replica = state.record.value.id;
    const inBefore = was.get(replica);
    const inNext = now_.get(replica);
    if (!!inBefore !== !!inNext || (inBefore && inNext && !sameEndpoint(inBefore, inNext))) {
      const s = standingFor(state);
      // Ready but past the listed bound: it leaves the list, not the ready count.
      changes.push(s.endpoint && !inNext ? { ...s, why: `${s.replica} is ready but not listed: the set lists ${next.length} of ${ready.length} within ${ENDPOINT_LIMITS.listedBytes} bytes` } : s);
    }
  }
  // Published replicas whose record is gone altogether (deleted after retirement).
  const known = new Set(states.map((s) => s.state.record.value.id));
  for (const e of before) {
    if (!known.has(e.replica)) {
      const rk = buildKey('replica', service, e.replica);
      changes.push({ replica: e.replica, why: `${e.replica} left: its replica record is gone`, cause: causedByFact({ key: rk, modRevision: 0 }), evidence: [absentEvidence(rk)], readSet: [absent(rk)] });
    }
  }
  // A store txn compares at most 128 keys: a large change (a whole service becoming ready)
  // goes out as a chain of txns, leaves first, each publishing a valid set of its own and
  // comparing the set the previous one wrote.
  const joins = (c: Standing) => Number(now_.has(c.replica));
  changes.sort((a, b) => joins(a) - joins(b) || byText(a.node ?? '', b.node ?? '') || byText(a.replica, b.replica));
  if (!spec) return (await publish(ctx, service, current, changes, [], undefined, now_, 0)).ok ? {} : retrySoon(now);
  let published = current;
  let txns = 0;
  // Only the last txn of the chain knows the whole ready count; before it, what is listed.
  for (let i = 0; i === 0 || i < changes.length; ) {
    if (txns++ >= MAX_TXNS) return { at: now };
    const { batch, reasons } = nextLink(changes, i);
    i += Math.max(1, batch.length);
    const r = await publish(ctx, service, published, batch, reasons, spec, now_, i >= changes.length ? ready.length : undefined);
    if (!r.ok) return retrySoon(now);
    published = r.written;
  }
  return {};
}

/**
 * The changes of the chain's next txn, from `from` on, and its reasons: as many changes as
 * keep its compares (a key shared by several changes counted once) within MAX_COMPARES, its
 * evidence within the decision's bound, and its reasons within theirs — one reason per run
 * of changes on one node, their words joined while they fit a reason's length — so the
 * decision cites and words every change it makes, none clipped.
 */
function nextLink(changes: readonly Standing[], from: number): { batch: Standing[]; reasons: string[] } {
  const compares = new Set<string>();
  let evidence = 1; // the set as read
  const reasons: string[] = [];
  const batch: Standing[] = [];
  for (let i = from; i < changes.length; i++) {
    const c = changes[i]!;
    const last = reasons.length - 1;
    const sameReason = batch.length > 0 && c.node === batch.at(-1)!.node && reasons[last]!.length + REASON_SEPARATOR.length + c.why.length <= DECISION_LIMITS.maxTextChars;
    const added = c.readSet.filter((k) => !compares.has(compareId(k))).length;
    // One reason's room is kept for the listed-bound reason (publish).
    const fits = OWN_COMPARES + compares.size + added <= MAX_COMPARES && evidence + c.evidence.length <= DECISION_LIMITS.maxEvidence && (sameReason || reasons.length + 2 <= DECISION_LIMITS.maxReasons);
    if (!fits && batch.length > 0) break;
    for (const k of c.readSet) compares.add(compareId(k));
    evidence += c.evidence.length;
    if (sameReason) reasons[last] += `${REASON_SEPARATOR}${c.why}`;
    else reasons.push(c.why);
    batch.push(c);
  }
  return { batch, reasons };
}

const REASON_SEPARATOR = '; ';

const compareId = (c: Compare) => `${c.key}\0${c.target}`;

function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One txn: the set with this batch of changes applied (or withdrawn when the service is gone), with its decision. */
async function publish(
  ctx: StepContext,
  service: string,
  current: Fact<'endpoints'> | undefined,
  batch: readonly Standing[],
  /** The batch's own reasons (nextLink); unused when the service is gone. */
  batchReasons: readonly string[],
  spec: Fact<'service'> | undefined,
  next: ReadonlyMap<string, Endpoint>,
  ready: number | undefined,
): Promise<{ ok: false } | { ok: true; written: Fact<'endpoints'> }> {
  const { store, now } = ctx;
  const key = buildKey('endpoints', service);
  const before = current?.value.endpoints ?? [];
  const endpoints = spec ? applyChanges(before, batch, next) : [];
  const count = ready ?? endpoints.length;
  const reasons = !spec
    ? [`the service was deleted: ${before.length} endpoint(s) withdrawn`]
    : [...(count > endpoints.length ? [`${count} ready, ${endpoints.length} listed: the set lists at most ${ENDPOINT_LIMITS.listedBytes} bytes of entries`] : []), ...batchReasons];
  const first = batch[0];
  const cause: Cause = !spec ? causedByFact({ key: buildKey('service', service), modRevision: 0 }) : first ? first.cause : causedByFact(spec);
  const d = decide({
    kind: 'service',
    subject: service,
    controller: ENDPOINT_CONTROLLER,
    action: !spec ? 'endpoints withdrawn' : `endpoints changed: ${count} ready`,
    // The set's digest keeps two changes in one millisecond apart.
    tag: `ep-${digest(endpoints.map((e) => `${e.replica}@${e.address}`))}`,
    at: now,
    evidence: [current ? evidenceOf(current) : absentEvidence(key), ...batch.flatMap((c) => c.evidence).slice(0, DECISION_LIMITS.maxEvidence - 1)],
    cause,
    reasons: reasons.length > 0 ? reasons : ['the published set differed from the replicas'],
  });
  const value = { service, endpoints, ...(count > endpoints.length ? { ready: count } : {}), at: now };
  const put = spec ? putFact('endpoints', [service], value) : undefined;
  const ops: Op[] = [put ?? deleteKey(key), ...d.ops];
  // Read-set rule: the change is justified by the keys of the replicas that joined or left
  // (and the spec and the published set). A member that stays is not compared: its report
  // changing meanwhile (a usage figure, every few seconds per replica) must not make every
  // step of a large service fail; if its standing did change, that change wakes the next step.
  const compares = [unchanged(current, key), unchanged(spec, buildKey('service', service)), ...(spec ? batch.flatMap((c) => c.readSet) : [])];
  const r = await store.txn({ compare: dedupe([...compares, ...d.compares]), success: ops });
  if (!r.succeeded) return { ok: false };
  // The value as written (encoded once): the next txn of the chain compares and cites it.
  const kv: KeyValue = { key, value: put && 'put' in put ? put.put.value : JSON.stringify(value), createRevision: current?.kv.createRevision ?? r.revision, modRevision: r.revision, version: (current?.kv.version ?? 0) + 1, lease: 0 };
  return { ok: true, written: { key, kv, value } };
}

/** `before` with a batch of changes applied: joins and moves take their new entry, leaves drop out. */
function applyChanges(before: readonly Endpoint[], batch: readonly Standing[], next: ReadonlyMap<string, Endpoint>): Endpoint[] {
  const out = new Map(before.map((e) => [e.replica, e]));
  for (const c of batch) {
    const e = next.get(c.replica);
    if (e) out.set(c.replica, e);
    else out.delete(c.replica);
  }
  return [...out.values()].sort(byReplica);
}

function byReplica(a: Endpoint, b: Endpoint): number {
  return byText(a.replica, b.replica);
}

/** The replica's standing and the words `cca why service` shows for it. */
function standingOf(s: ReplicaState): Omit<Standing, 'readSet'> {
  const rec = s.record.value;
  const id = rec.id;
  const evidence: Evidence[] = [evidenceOf(s.record)];
  if (rec.desired !== 'run' || rec.retired) {
    const at = rec.stopRequestedAt ?? rec.createdAt;
    const reason = replicaReason(rec);
    return { replica: id, why: `${id} left: the replica controller is stopping it${reason ? ` (${reason})` : ''}`, cause: causedBy(decisionKey('replica', id, at, 'rc-stop')), evidence };
  }
  if (!s.placement) return { replica: id, why: `${id} is not placed`, cause: causedByFact(s.record), evidence };
  const node = s.placement.value.node;
  const obs = admissibleObservation(s);
  if (!obs) {
    const { why, cause } = inadmissible(s, node);
    if (s.observation) evidence.push(evidenceOf(s.observation));
    if (s.status) evidence.push(evidenceOf(s.status));
    return { replica: id, why: `${id} left: ${why}`, cause, evidence };
  }
  evidence.push(evidenceOf(obs));
  const o = obs.value;
  const check = s.assignment!.value.spec.health.readiness;
  const endpoint = endpointOf(s);
  if (!endpoint) {
    const what =
      o.state !== 'running'
        ? `${o.state}${o.exitCode !== undefined ? ` with code ${o.exitCode}` : ''}${o.diagnostic ? ` (${o.diagnostic.message})` : ''}`
        : o.health.liveness === 'failing'
          ? 'liveness failing'
          : `readiness ${o.health.readiness}${check ? ` (${probeText(check.probe)})` : ''}`;
    return { replica: id, why: `${id} is out: ${what} on ${node}`, cause: causedByFact(obs), evidence };
  }
  return { replica: id, endpoint, why: `${id} joined: running and ${check ? 'ready' : 'running (no readiness check)'} on ${node} at ${endpoint.address}${portsText(endpoint.ports)}`, cause: causedByFact(obs), evidence };
}

/** The replica's entry in the set, when it serves traffic: wanted running, placed, its admissible report running and ready (standingOf words why, or why not). */
function endpointOf(s: ReplicaState): Endpoint | undefined {
  const rec = s.record.value;
  if (rec.desired !== 'run' || rec.retired || !s.placement) return undefined;
  const obs = admissibleObservation(s);
  if (!obs) return undefined;
  const o = obs.value;
  const spec = s.assignment!.value.spec;
  if (!servesTraffic(o, spec.health.readiness !== undefined)) return undefined;
  const nodeAddress = s.node ? decodeMemo.decodeKv('node', s.node).address : '';
  const address = o.address || nodeAddress || DEFAULT_ADDRESS;
  const ports = o.ports ?? Object.fromEntries(spec.ports.map((p) => [p.name, p.container]));
  return { replica: rec.id, node: s.placement.value.node, address, ports };
}

/** Why an observation does not count (rule 5), and the cause to cite. */
function inadmissible(s: ReplicaState, node: string): { why: string; cause: Cause } {
  const tenure = s.placement!.value.tenure;
  const nodeKey = buildKey('node', node);
  if (!s.node || s.node.createRevision !== tenure) {
    return { why: `node ${node} ended tenure ${tenure} (${s.node ? `re-registered as ${s.node.createRevision}` : 'its registration lease expired'})`, cause: causedByFact(s.node ? { key: nodeKey, kv: s.node } : { key: nodeKey, modRevision: 0 }) };
  }
  if (!s.status || (s.status.value.state !== 'ready' && s.status.value.state !== 'unreachable') || s.status.value.tenure !== tenure) {
    const st = s.status?.value;
    const cause = st?.state === 'lost' ? causedBy(decisionKey('node', node, st.since, 'node-lost')) : causedByFact(s.status ?? { key: buildKey('nodeStatus', node), modRevision: 0 });
    return { why: `node ${node} is ${st ? `${st.state} (tenure ${st.tenure})` : 'not ready yet'}`, cause };
  }
  if (!s.observation) return { why: `nothing observed on ${node} yet`, cause: causedByFact(s.placement!) };
  return { why: `the report from ${node} is from tenure ${s.observation.value.tenure}, not ${tenure}`, cause: causedByFact(s.observation) };
}

/** Every key the replica's standing was read from, present or absent. */
function readSetOf(s: ReplicaState): Compare[] {
  const id = s.record.value.id;
  const out: Compare[] = [unchanged(s.record), unchanged(s.placement, buildKey('placement', id))];
  if (!s.placement) return out;
  const n = s.placement.value.node;
  out.push(
    unchanged(s.assignment, buildKey('assigned', n, id)),
    unchanged(s.observation, buildKey('observed', n, id)),
    s.node ? { key: s.node.key, target: 'modRevision', op: '=', value: s.node.modRevision } : absent(buildKey('node', n)),
    unchanged(s.status, buildKey('nodeStatus', n)),
  );
  return out;
}

function dedupe(cs: Compare[]): Compare[] {
  const seen = new Map<string, Compare>();
  for (const c of cs) seen.set(compareId(c), c);
  return [...seen.values()];
}

function sameEndpoint(a: Endpoint, b: Endpoint): boolean {
  return a.replica === b.replica && a.node === b.node && a.address === b.address && JSON.stringify(sortedPorts(a.ports)) === JSON.stringify(sortedPorts(b.ports));
}

function sameSet(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  return a.length === b.length && a.every((e, i) => sameEndpoint(e, b[i]!));
}

function sortedPorts(p: Record<string, number>): [string, number][] {
  return Object.entries(p).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}

function portsText(p: Record<string, number>): string {
  const list = sortedPorts(p);
  return list.length === 0 ? '' : ` (${list.map(([n, v]) => `${n} ${v}`).join(', ')})`;
}

function probeText(p: { type: string; path?: string; port?: number | string }): string {
  if (p.type === 'http') return `http ${p.path ?? '/'}${p.port !== undefined ? ` on ${p.port}` : ''}`;
  if (p.type === 'tcp') return `tcp${p.port !== undefined ? ` ${p.port}` : ''}`;
  return 'exec';
}
