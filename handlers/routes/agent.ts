import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { loopbackNetworks, peerAddressProblem } from '../../core/model/peer-address.js';
import { z } from 'zod';
import { tieSignals } from '../../core/abort.js';
import { CcaError, isCcaError } from '../../core/diagnostics/index.js';
import { buildKey, decodeFact, encodeFact, prefixOf, segmentProblem } from '../../core/keys.js';
import { eventSchema, nodeRecordSchema, observationSchema, volumeObservationSchema, type NodeRecord, type Observation } from '../../core/model/index.js';
import type { Compare, KeyValue, LeaseTtl, Op, Store, WatchRequest } from '../../db/store.js';
import { backFromSilence, QUORUM, stampOnResume } from '../../core/model/quorum.js';
import { requireNode, requireRole, type AuthEnv } from '../auth.js';
import { enrollNode, rotateCredential } from '../identity.js';
import { jsonBody, parseBody } from '../body.js';
import type { ServerDeps } from '../deps.js';
import { decodeMemo } from '../../jobs/decode-memo.js';
import { readFacts } from '../../jobs/facts.js';
import { REPORT_TXN_ROOM, staleObservationWrites } from '../../jobs/stale-observations.js';
import { NETWORK_WATCH_PREFIX, readNetworkBundle } from '../network-bundle.js';
import { openSpec } from '../secret-box.js';
import { parseQuery, revisionParam } from '../query.js';
import type { PodLimits } from '../limits/pod-limits.js';
import { chunks } from '../../core/chunks.js';

export const MAX_EVENTS_PER_NODE = 200;
/**
 * Trimming a node's events lists them all (a keys-only read of up to MAX_EVENTS_PER_NODE +
 * this), so a pod trims once it has taken this many of the node's events since its last
 * trim, and at its first report of the node: a node holds at most MAX_EVENTS_PER_NODE + this
 * per pod that takes its reports. In a 1,000-replica roll the listing was a quarter of the
 * pod's reads from the database.
 */
export const EVENTS_TRIM_EVERY = 50;
/** Nodes whose events-since-trim a pod counts; past it the count starts over (a trim each, at worst). */
const EVENTS_TRIM_NODES = 10_000;
/**
 * Writes per store transaction: the store takes at most `limits.maxTxnOps` (128) ops and as
 * many compares; a report of more is written in several transactions, each under the tenure.
 */
const OPS_PER_TXN = 100;
/** At most this many events in one request (the agent sends ≤ 100): more is refused, never trimmed. */
export const MAX_EVENTS_PER_REQUEST = 100;

const enrollBody = z.strictObject({ node: z.string().min(1).max(253) });
const registerBody = z.object({
  leaseTtlSeconds: z.int().min(2).max(3600).default(10),
  resumeLease: z.int().min(1).optional(),
});
const keepaliveBody = z.strictObject({ lease: z.int().min(1) });
const assignmentsQuery = z.strictObject({ after: revisionParam.default(0), waitMs: z.coerce.number().int().min(0).max(60_000).optional() });
/** A later page of the assignments: read at the first page's revision, after the replica the last page ended with. */
const assignmentsPageQuery = assignmentsQuery.extend({ revision: revisionParam.optional(), cursor: z.string().min(1).max(300).optional() });
const observationsBody = z.strictObject({ tenure: z.int().min(1), observations: z.array(z.unknown()).max(1000) });
const observedVolumesBody = z.strictObject({ tenure: z.int().min(1), volumes: z.array(z.unknown()).max(256) });
const nameSegment = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a DNS label');
const observedVolumeBody = volumeObservationSchema.extend({ service: nameSegment, volume: nameSegment });
const eventsBody = z.strictObject({ tenure: z.int().min(1), events: z.array(z.unknown()).max(MAX_EVENTS_PER_REQUEST) });

/** The node's current tenure: the create revision of its registration, 0 when unregistered. */
async function tenureOf(store: Store, node: string): Promise<number> {
  return (await store.get(buildKey('node', node)))?.createRevision ?? 0;
}

/** Writes an agent makes under its tenure: refused, as a whole, once that tenure is gone. */
async function writeUnderTenure(store: Store, node: string, tenure: number, ops: Parameters<Store['txn']>[0]['success']) {
  const r = await tryUnderTenure(store, node, tenure, ops, []);
  if (r === undefined) throw new CcaError('CCA-E0613', { node, tenure, current: await tenureOf(store, node) });
  return r;
}

/** The write under the tenure and `also`; undefined when a compare failed. */
async function tryUnderTenure(store: Store, node: string, tenure: number, ops: Parameters<Store['txn']>[0]['success'], also: Compare[]): Promise<number | undefined> {
  const key = buildKey('node', node);
  const r = await store.txn({ compare: [{ key, target: 'createRevision', op: '=', value: tenure }, ...also], success: ops });
  return r.succeeded ? r.revision : undefined;
}

/** A stop is all an agent may report for a replica of a past tenure: the proof that it no longer runs there. */
const STOPPED = new Set(['exited', 'failed', 'lost']);

/**
 * Which assignments admit these observations (DESIGN rule 5 at the door): each must name a
 * replica assigned to this node, under the reporting tenure — or, for a stop confirmation
 * (docs/volumes.md), under a past one. Returns compares on every assignment relied on, so a
 * release racing the report makes it write nothing rather than leave a key nobody owns.
 */
async function admit(store: Store, node: string, tenure: number, observations: Observation[]): Promise<{ compares: Compare[]; assigned: Set<string> }> {
  const { facts } = await readFacts(store, 'assigned', [node]);
  const byReplica = new Map(facts.map((f) => [f.value.replica, f]));
  const compares = new Map<string, Compare>();
  for (const o of observations) {
    const a = byReplica.get(o.replica);
    if (!a) throw new CcaError('CCA-E0634', { node, replica: o.replica, reason: await notAssignedReason(store, node, o.replica) });
    const t = a.value.tenure;
    if (t > tenure || (t < tenure && !STOPPED.has(o.state))) {
      const reason = t > tenure ? `it is assigned under tenure ${t}, newer than the report's ${tenure}` : `it was assigned under the past tenure ${t}: only its stop can be reported now, not ${o.state}`;
      throw new CcaError('CCA-E0634', { node, replica: o.replica, reason });
    }
    compares.set(a.key, { key: a.key, target: 'modRevision', op: '=', value: a.kv.modRevision });
  }
  return { compares: [...compares.values()], assigned: new Set(byReplica.keys()) };
}

async function notAssignedReason(store: Store, node: string, replica: string): Promise<string> {
  if (segmentProblem(replica) !== undefined) return 'it is not assigned to this node';
  const kv = await store.get(buildKey('placement', replica));
  const other = kv ? decodeMemo.decodeKv('placement', kv).node : undefined;
  return other !== undefined && other !== node ? `it is placed on node ${other}` : 'it is not assigned to this node';
}

/** What a read from the pod's read mirror may refuse wrongly (it may not yet hold what the agent saw through another pod): confirmed on the store. */
const CONFIRMED_REFUSALS = new Set(['CCA-E0613', 'CCA-E0634']);

/** `judge` on `first` (the read mirror); if it refuses, or with no mirror, on `exact` (the store). */
async function confirmed<T>(first: Store, exact: Store, judge: (reads: Store) => Promise<T>): Promise<T> {
  if (first === exact) return judge(exact);
  try {
    return await judge(first);
  } catch (e) {
    if (isCcaError(e) && CONFIRMED_REFUSALS.has(e.code)) return judge(exact);
    throw e;
  }
}

/**
 * The observations written under the tenure, each admitted against the assignments it relies
 * on. The first attempt reads `first` (the read mirror); a refusal or a failed compare reads
 * `store` again: the txn compares every key the judgment read, so a read behind the head can
 * only make it fail, never write.
 */
async function writeObservations(store: Store, first: Store, node: string, tenure: number, observations: Observation[], withCleanup: boolean): Promise<number> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const written = await confirmed(attempt === 0 ? first : store, store, (reads) => writeObservationsOnce(reads, node, tenure, observations, withCleanup));
    if (written !== undefined) return written;
    // The tenure or an assignment changed between the read and the write: judge again.
  }
  throw new CcaError('CCA-E0611', { what: `the assignments of node ${node}` });
}

/** One attempt, judged on `reads` and written through it (a mirror view's later reads then follow the write); undefined when a compare failed. */
async function writeObservationsOnce(reads: Store, node: string, tenure: number, observations: Observation[], withCleanup: boolean): Promise<number | undefined> {
  // A stale tenure is refused before anything else is judged.
  const current = await tenureOf(reads, node);
  if (current !== tenure) throw new CcaError('CCA-E0613', { node, tenure, current });
  const { compares, assigned } = await admit(reads, node, tenure, observations);
  // Keys only for admitted replicas: a name that is no key segment was refused above.
  const ops: Op[] = observations.map((o) => ({ put: { key: buildKey('observed', node, o.replica), value: encodeFact('observed', o) } }));
  // The first part of a report also deletes what the node reported of replicas released since.
  if (withCleanup) {
    const room = REPORT_TXN_ROOM - Math.max(ops.length, compares.length);
    const stale = await staleObservationWrites(reads, node, assigned, new Set(observations.map((o) => o.replica)), room);
    compares.push(...stale.compares);
    ops.push(...stale.ops);
  }
  return tryUnderTenure(reads, node, tenure, ops, compares);
}

/** The first items whose JSON fits in `maxBytes`, at least one: an answer bounded in bytes, paged. */
function pageByBytes<T>(items: readonly T[], maxBytes: number): T[] {
  let bytes = 2;
  let n = 0;
  while (n < items.length) {
    bytes += Buffer.byteLength(JSON.stringify(items[n])) + 1;
    if (n > 0 && bytes > maxBytes) break;
    n++;
  }
  return items.slice(0, n);
}

/**
 * Event keys sortable by time and derived from the event itself (plus its rank among equal
 * events of the batch), so a batch the agent sends again after a lost answer lands on the
 * same keys instead of doubling.
 */
function eventKeys(node: string, events: readonly { at: number }[]): string[] {
  const seen = new Map<string, number>();
  return events.map((e) => {
    const body = JSON.stringify(e);
    const rank = seen.get(body) ?? 0;
    seen.set(body, rank + 1);
    const id = createHash('sha256').update(`${body}\n${rank}`).digest('hex').slice(0, 12);
    return buildKey('event', node, `${String(e.at).padStart(15, '0')}-${id}`);
  });
}

/** The address the request came from (the socket's peer), when served over a socket. */
function sourceAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    // app.request() in tests: no socket.
    return undefined;
  }
}

/**
 * A keepalive that ends a silence of R or more first stamps the node's `renewingSince`: its
 * renewals count toward an expiry's majority only G after it (docs/fencing.md). Written before
 * the renewal, so the controller never sees the renewal without the stamp. `t`: the lease's
 * time to live, read before the renewal.
 */
async function stampReturn(store: Store, key: string, record: NodeRecord, lease: number, t: LeaseTtl): Promise<void> {
  if (t.ttl < 0 || !backFromSilence((t.grantedTtl - t.ttl) * 1000, (record.leaseTtlSeconds ?? t.grantedTtl) * 1000)) return;
  const r = await store.txn({
    compare: [{ key, target: 'lease', op: '=', value: lease }],
    success: [{ put: { key, value: encodeFact('node', { ...record, renewingSince: Date.now() }), lease } }],
  });
  if (!r.succeeded) throw new CcaError('CCA-E0107', { lease });
}

/** The stamp a registration under the record's own lease keeps or renews (stampOnResume). */
async function resumedStamp(store: Store, existing: KeyValue, lease: number, ttlSeconds: number): Promise<number> {
  const [t] = (await store.leasesTimeToLive([lease])) as [LeaseTtl];
  const previous = decodeFact('node', existing.key, existing.value);
  // The shorter of the two TTLs judges the silence: the smaller R, the more stamps.
  const ttlMs = Math.min(previous.leaseTtlSeconds ?? t.grantedTtl, ttlSeconds) * 1000;
  return stampOnResume(previous.renewingSince, t.ttl < 0 ? undefined : (t.grantedTtl - t.ttl) * 1000, ttlMs, Date.now());
}

/** The reason a long poll's own signal aborts with: one value, not a DOMException (and its stack) per poll. */
const POLL_ENDED = Object.freeze({ reason: 'long poll ended' });

/**
 * A long poll: whether anything under `watch` changed after revision `after`, waiting up to
 * `waitMs` (the server's long-poll limit by default), until the client goes away or the pod
 * stops (`deps.closing`). The
 * caller answers with the current value either way.
 */
async function changedSince(
  deps: ServerDeps,
  watch: Pick<WatchRequest, 'key' | 'prefix'>,
  q: { after: number; waitMs?: number | undefined },
  gone: AbortSignal,
  relevant: (key: string) => boolean = () => true,
): Promise<boolean> {
  const waitMs = q.waitMs ?? deps.limits.longPollMs;
  if (q.after === 0) return true;
  // A pod that stops answers its long polls at once, while its store is still open.
  if (waitMs <= 0 || deps.closing?.aborted) return false;
  // Untied when the poll ends, however it ends: a listener left on the request's signal kept
  // the whole request and its response alive for good (undici's Request holds its signal's
  // listeners in a FinalizationRegistry whose target they reach): ~4.5 MiB a minute at 100 agents.
  const ac = new AbortController();
  const tie = tieSignals(deps.closing ? [gone, deps.closing] : [gone], ac);
  const timer = setTimeout(() => ac.abort(POLL_ENDED), waitMs);
  deps.metrics.watchers.inc();
  try {
    for await (const batch of deps.store.watch({ ...watch, fromRevision: q.after + 1, signal: ac.signal })) if (batch.events.some((e) => relevant(e.kv.key))) return true;
    return false;
  } catch {
    // Compacted past `after`: the current value is the answer anyway.
    return true;
  } finally {
    clearTimeout(timer);
    tie.done();
    ac.abort(POLL_ENDED);
    deps.metrics.watchers.dec();
  }
}

/** `keepaliveStore`: the store keepalives use (the interactive lane: handlers/app.ts); the rest use `deps.store`. */
export function agentRoutes(deps: ServerDeps, pod: PodLimits, keepaliveStore: Store = deps.store) {
  const { store } = deps;
  /** A hot route's reads: the pod's read mirror at or after `atLeast` (ServerDeps.agentView), else the store. */
  const mirrored = (atLeast = 0): Store => deps.agentView?.(atLeast) ?? store;
  /** A long poll holds one of its credential's stream slots while it waits (CCA-E0642 over the cap). */
  const polled = async <T>(c: Context<AuthEnv>, poll: () => Promise<T>): Promise<T> => {
    const release = pod.slots.hold(c.get('principal'));
    try {
      return await poll();
    } finally {
      release();
    }
  };
  const app = new Hono<AuthEnv>();

  // A node's first credential only: a join token cannot take over a node that has one (CCA-E0630).
  app.post('/v1/agent/enroll', requireRole('join'), async (c) => {
    const { node } = parseBody(enrollBody, await jsonBody(c));
    const check = nodeRecordSchema.shape.name.safeParse(node);
    if (!check.success) throw new CcaError('CCA-E0614', { node, reason: check.error.issues[0]!.message });
    const { credential, revision } = await enrollNode(store, c.get('principal'), node);
    return c.json({ node, credential, revision });
  });

  // The node's own credential buys a new one; the old one stops working in the same write.
  app.post('/v1/agent/nodes/:node/rotate', requireNode('rotate the credential', { credentialOnly: true }), async (c) => {
    const node = c.req.param('node');
    const p = c.get('principal');
    if (p.kind !== 'node') throw new CcaError('CCA-E0605', { needs: `the credential of node ${node}`, got: 'another kind of token' });
    const { credential, revision } = await rotateCredential(store, node, p.credentialRevision);
    return c.json({ node, credential, revision });
  });

  app.post('/v1/agent/nodes/:node/register', requireNode('register'), async (c) => {
    const node = c.req.param('node');
    const body = (await jsonBody(c)) as Record<string, unknown>;
    const opts = parseBody(registerBody, body);
    const { leaseTtlSeconds: _ttl, resumeLease: _resume, ...record } = body;
    // The TTL goes into the record: the node controller expires the node by it (docs/fencing.md).
    // renewingSince: a registration starts a run of renewals, counted for expiries only G later (docs/fencing.md).
    const parsed = nodeRecordSchema.safeParse({ ...record, leaseTtlSeconds: opts.leaseTtlSeconds, renewingSince: Date.now() });
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw new CcaError('CCA-E0614', { node, reason: `${i.path.join('.') || 'record'}: ${i.message}` });
    }
    if (parsed.data.name !== node) throw new CcaError('CCA-E0614', { node, reason: `the record names node ${parsed.data.name}` });
    // Every peer dials this address: only this node's own source address or a declared peer network (docs/security.md).
    if (parsed.data.peer) {
      const from = sourceAddress(c);
      const problem = peerAddressProblem(parsed.data.peer.address, { networks: deps.peerNetworks ?? loopbackNetworks(), registeredFrom: from });
      if (problem !== undefined) throw new CcaError('CCA-E0581', { node, address: parsed.data.peer.address, reason: problem });
      parsed.data.peer = { address: parsed.data.peer.address, publicKey: parsed.data.peer.publicKey, ...(from !== undefined ? { from } : {}) };
    }
    const key = buildKey('node', node);
    const value = encodeFact('node', parsed.data);
    const existing = await store.get(key);
    if (opts.resumeLease !== undefined && existing?.lease === opts.resumeLease) {
      // An agent restarted within its lease (or publishing a node condition): same registration,
      // same tenure. renewingSince moves only after a silence of R, as at a keepalive, and is
      // written before the renewal (docs/fencing.md).
      const since = await resumedStamp(store, existing, opts.resumeLease, opts.leaseTtlSeconds);
      const ttl = opts.leaseTtlSeconds;
      const r = await store.txn({
        compare: [{ key, target: 'lease', op: '=', value: opts.resumeLease }],
        success: [{ put: { key, value: encodeFact('node', { ...parsed.data, renewingSince: since }), lease: opts.resumeLease } }],
      });
      if (r.succeeded) {
        await store.keepAlive(opts.resumeLease);
        return c.json({ lease: opts.resumeLease, ttl, tenure: existing.createRevision, revision: r.revision });
      }
    }
    // A new registration is a new tenure: end the previous one first (its lease takes its keys).
    if (existing && existing.lease !== 0) await store.revokeLease(existing.lease).catch(() => undefined);
    // The store lease is only a backstop: the node controller expires the node after
    // leaseTtlSeconds of silence, and only while a majority of the members renew.
    const lease = await store.grantLease(Math.max(QUORUM.backstopSeconds, opts.leaseTtlSeconds));
    const r = await store.txn({
      compare: [{ key, target: 'createRevision', op: '=', value: 0 }],
      success: [{ put: { key, value, lease: lease.id } }],
    });
    if (!r.succeeded) {
      await store.revokeLease(lease.id).catch(() => undefined);
      throw new CcaError('CCA-E0611', { what: `the registration of node ${node}` });
    }
    return c.json({ lease: lease.id, ttl: opts.leaseTtlSeconds, tenure: r.revision, revision: r.revision });
  });

  app.post('/v1/agent/nodes/:node/keepalive', requireNode('keep alive'), async (c) => {
    const node = c.req.param('node');
    const { lease } = parseBody(keepaliveBody, await jsonBody(c));
    // The most frequent agent request (every node, T/4 apart), answered within the agent's
    // D or it counts as failed: the node's record and status, and the lease's silence for the
    // return stamp (without its keys), read at once — two round trips in a row, not three,
    // each waiting for a turn of a busy pod (docs/benchmarks.md, System, session 24).
    const [[kv, st], [silence]] = await Promise.all([keepaliveStore.getMany([buildKey('node', node), buildKey('nodeStatus', node)]), keepaliveStore.leasesTimeToLive([lease]) as Promise<[LeaseTtl]>]);
    if (!kv || kv.lease !== lease) throw new CcaError('CCA-E0107', { lease });
    // The node controller expired this tenure (docs/fencing.md) and revokes the lease: no renewal from that write on.
    const status = st ? decodeMemo.decodeKv('nodeStatus', st) : undefined;
    if (status?.state === 'lost' && status.expired && status.tenure === kv.createRevision) {
      await keepaliveStore.revokeLease(lease).catch(() => undefined);
      throw new CcaError('CCA-E0107', { lease });
    }
    const record = decodeMemo.decodeKv('node', kv);
    await stampReturn(keepaliveStore, kv.key, record, lease, silence);
    const renewed = await keepaliveStore.keepAlive(lease);
    // The agent fences by the TTL it registered with, not the backstop's.
    return c.json({ ttl: record.leaseTtlSeconds ?? renewed.ttl });
  });

  app.get('/v1/agent/nodes/:node/assignments', requireNode('read assignments'), async (c) => {
    const node = c.req.param('node');
    const q = parseQuery(c, assignmentsPageQuery);
    if ((q.cursor === undefined) !== (q.revision === undefined)) throw new CcaError('CCA-E0603', { where: 'query parameters cursor and revision', reason: 'a later page names both: the first page\'s revision and its cursor' });
    // A later page answers at once; the first waits for a change.
    const changed = q.cursor !== undefined ? true : await polled(c, () => changedSince(deps, { prefix: prefixOf('assigned', node) }, q, c.req.raw.signal));
    // A first page from the read mirror, at or after the revision the agent already has and the
    // change that answered the poll (never older than what it saw); a later page at the first's revision.
    const reads = q.revision === undefined ? mirrored(q.after) : store;
    const { revision, facts } = await readFacts(reads, 'assigned', [node], q.revision ?? 0);
    // The membership the agent counts its peers against, read at the same revision (docs/fencing.md).
    const m = await reads.get(buildKey('membership', 'nodes'), { revision });
    const membership = m ? (decodeMemo.decodeKv('membership', m).versions.at(-1) ?? null) : null;
    // The one place a secret is opened: for the agent of the node that runs the replica.
    const rest = q.cursor === undefined ? facts : facts.filter((f) => f.value.replica > q.cursor!);
    const page = pageByBytes(rest.map((f) => ({ ...f.value, spec: openSpec(deps.secrets, f.value.spec) })), deps.limits.assignmentsPageBytes);
    const more = page.length < rest.length;
    return c.json({ revision, changed, membership, assignments: page, ...(more ? { more, cursor: page.at(-1)!.replica } : {}) });
  });

  // What the node's agent needs to police its replicas, long-polled and paged like the
  // assignments: the node's rule set, its policed services' policies and the address sets
  // they name, read at one revision; a change to any of them (not another node's) answers.
  app.get('/v1/agent/nodes/:node/network', requireNode('read network rules'), async (c) => {
    const node = c.req.param('node');
    const q = parseQuery(c, assignmentsPageQuery);
    if ((q.cursor === undefined) !== (q.revision === undefined)) throw new CcaError('CCA-E0603', { where: 'query parameters cursor and revision', reason: 'a later page names both: the first page\'s revision and its cursor' });
    let changed = true;
    if (q.cursor === undefined) {
      const { keys } = await readNetworkBundle(store, node, await store.revision());
      changed = await polled(c, () => changedSince(deps, { prefix: NETWORK_WATCH_PREFIX }, q, c.req.raw.signal, (k) => keys.has(k)));
    }
    const revision = q.revision ?? (await store.revision());
    const { rules, items } = await readNetworkBundle(store, node, revision);
    const rest = q.cursor === undefined ? items : items.filter((i) => i.key > q.cursor!);
    const page = pageByBytes(rest, deps.limits.assignmentsPageBytes);
    const more = page.length < rest.length;
    const policies = page.flatMap((i) => ('policy' in i ? [i.policy] : []));
    const addresses = page.flatMap((i) => ('addresses' in i ? [i.addresses] : []));
    return c.json({ revision, changed, rules, policies, addresses, ...(more ? { more, cursor: page.at(-1)!.key } : {}) });
  });

  app.post('/v1/agent/nodes/:node/observations', requireNode('report observations'), async (c) => {
    const node = c.req.param('node');
    const body = parseBody(observationsBody, await jsonBody(c));
    const observations = body.observations.map((raw, i) => {
      const o = parseBody(observationSchema, raw);
      if (o.node !== node || o.tenure !== body.tenure) {
        throw new CcaError('CCA-E0603', { where: `observations.${i}`, reason: `it names node ${o.node} tenure ${o.tenure}` });
      }
      return o;
    });
    if (observations.length === 0) return c.json({ revision: await store.revision() });
    // Each key written wakes controllers: a node writes at its rate, refused before anything is read.
    pod.nodeWrites.admit(node, observations.length);
    // Observations are independent facts: a large report is written in parts, each admitted
    // against the assignments it relies on (one compare each, within the store's bound).
    // The whole batch is judged first, so a refused replica leaves nothing of it written.
    // Judged on the read mirror, a refusal confirmed on the store.
    const reads = mirrored();
    await confirmed(reads, store, (r) => admit(r, node, body.tenure, observations));
    let revision = 0;
    let first = true;
    for (const part of chunks(observations, OPS_PER_TXN)) {
      revision = await writeObservations(store, reads, node, body.tenure, part, first);
      first = false;
    }
    return c.json({ revision });
  });


  // Long-polled like the assignments when `after` is given (the agent follows it so); at once without.
  app.get('/v1/agent/nodes/:node/volumes', requireNode('read volumes'), async (c) => {
    const node = c.req.param('node');
    const q = parseQuery(c, assignmentsQuery);
    const changed = await polled(c, () => changedSince(deps, { prefix: prefixOf('volume', node) }, q, c.req.raw.signal));
    const { revision, facts } = await readFacts(store, 'volume', [node]);
    return c.json({ revision, changed, volumes: facts.map((f) => f.value) });
  });

  /** The node's volumes as its agent sees them: each one put, reports of volumes no longer there deleted. */
  app.post('/v1/agent/nodes/:node/observed-volumes', requireNode('report volumes'), async (c) => {
    const node = c.req.param('node');
    const body = parseBody(observedVolumesBody, await jsonBody(c));
    // Each volume reported is a key written (and a wakeup): at the node's rate like its
    // observations, refused before anything is read or written.
    pod.nodeWrites.admit(node, body.volumes.length);
    const keep = new Set<string>();
    const ops: Parameters<Store['txn']>[0]['success'] = [];
    body.volumes.forEach((raw, i) => {
      const v = parseBody(observedVolumeBody, raw);
      const key = buildKey('observedVolume', node, v.service, v.volume);
      if (keep.has(key)) throw new CcaError('CCA-E0603', { where: `volumes.${i}`, reason: `volume ${v.volume} of ${v.service} is listed twice` });
      keep.add(key);
      const { service: _s, volume: _v, ...obs } = v;
      ops.push({ put: { key, value: encodeFact('observedVolume', obs) } });
    });
    const existing = await store.range({ prefix: prefixOf('observedVolume', node), keysOnly: true });
    for (const kv of existing.kvs) if (!keep.has(kv.key)) ops.push({ delete: { key: kv.key } });
    if (ops.length === 0) return c.json({ revision: await store.revision() });
    return c.json({ revision: await writeUnderTenure(store, node, body.tenure, ops) });
  });

  /** Events this pod took per node since it last trimmed them (EVENTS_TRIM_EVERY). */
  const eventsSinceTrim = new Map<string, number>();
  app.post('/v1/agent/nodes/:node/events', requireNode('report events'), async (c) => {
    const node = c.req.param('node');
    const body = parseBody(eventsBody, await jsonBody(c));
    const events = body.events.map((raw) => parseBody(eventSchema, raw));
    if (events.length === 0) return c.json({ revision: await store.revision() });
    pod.nodeWrites.admit(node, events.length);
    // The node keeps its newest MAX_EVENTS_PER_NODE events (keys sort by time): when a trim is
    // due (EVENTS_TRIM_EVERY) the new ones are put and the oldest beyond the bound deleted in the
    // same transactions, from one listing read first (an agent retrying after a failure
    // rewrites the same keys, see eventKeys); a new event older than all that are kept is then
    // not written at all. Otherwise the new ones are put.
    const keys = eventKeys(node, events);
    const taken = (eventsSinceTrim.get(node) ?? EVENTS_TRIM_EVERY) + events.length;
    if (eventsSinceTrim.size >= EVENTS_TRIM_NODES && !eventsSinceTrim.has(node)) eventsSinceTrim.clear();
    eventsSinceTrim.set(node, taken >= EVENTS_TRIM_EVERY ? 0 : taken);
    const existing = taken >= EVENTS_TRIM_EVERY ? (await store.range({ prefix: prefixOf('event', node), keysOnly: true })).kvs.map((k) => k.key) : [];
    const all = [...new Set([...existing, ...keys])].sort();
    const dropped = new Set(taken >= EVENTS_TRIM_EVERY ? all.slice(0, Math.max(0, all.length - MAX_EVENTS_PER_NODE)) : []);
    const ops: Op[] = [];
    events.forEach((e, i) => {
      if (!dropped.has(keys[i]!)) ops.push({ put: { key: keys[i]!, value: encodeFact('event', { ...e, node }) } });
    });
    for (const key of existing) if (dropped.has(key)) ops.push({ delete: { key } });
    let revision = 0;
    for (const chunk of chunks(ops, OPS_PER_TXN)) revision = await writeUnderTenure(store, node, body.tenure, chunk);
    return c.json({ revision: revision || (await store.revision()) });
  });

  return app;
}

