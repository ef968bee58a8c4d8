import { buildKey } from '../../core/keys.js';
import { historyWindowMs, isMajority, QUORUM, renewingWithinMs, settledFrom, type Member, type Membership, type MembershipVersion } from '../../core/model/quorum.js';
import { MAX_LEASES_PER_READ, type Compare, type LeaseTtl, type Op, type Store } from '../../db/store.js';
import { putFact, sameTenure, unchanged, type Fact } from '../facts.js';
import { causedByFact, decide, evidenceOf } from '../decisions/record.js';
import type { ClusterView } from './view.js';

/**
 * The node controller's half of the quorum rule (docs/fencing.md): it expires a node's lease
 * only while a strict majority of the members of EVERY membership version of the last W is
 * renewing, each for G at least since it last came back (isSettled); when that fails it holds — the silent nodes become `unreachable`, nothing is
 * expired or replaced — and when a majority renews again it lifts, giving every node a full
 * lease from the lift before it may expire. Pure, apart from readRenewals.
 */

const NODE_CONTROLLER = 'node';
/** While a node is unreachable (or due but held), look again this often: renewals do not wake controllers. */
export const HOLD_POLL_MS = 1_000;

interface Txn {
  compares: Compare[];
  ops: Op[];
}

/** What the store says of a node's lease: how long since it was last renewed (bounds, ms) and who expires it. */
export interface Renewal {
  lease: number;
  ttlMs: number;
  /** Registered through the API: the store lease is a backstop and this controller expires the node. */
  managed: boolean;
  /** The silence is at least this (for expiring) ... */
  silenceLower: number;
  /** ... and at most this (for counting the node as renewing). */
  silenceUpper: number;
  /** The server's stamp: when the node last registered or came back from a silence of R or more (its record's `renewingSince`). */
  renewingSince?: number;
}

/** One read of every registered node's lease: lease keepalives write no revision, so they are read, not watched. */
export async function readRenewals(store: Store, view: ClusterView): Promise<Map<string, Renewal>> {
  const out = new Map<string, Renewal>();
  // One statement on Postgres per chunk (it was one per node: 100 a step at 100 nodes, queued for connections).
  const held = [...view.nodes].filter(([, node]) => node.kv.lease !== 0);
  const ttls: LeaseTtl[] = [];
  for (let i = 0; i < held.length; i += MAX_LEASES_PER_READ) ttls.push(...(await store.leasesTimeToLive(held.slice(i, i + MAX_LEASES_PER_READ).map(([, node]) => node.kv.lease))));
  for (const [i, [name, node]] of held.entries()) {
    const t = ttls[i]!;
    if (t.ttl < 0) continue;
    const ttlMs = (node.value.leaseTtlSeconds ?? t.grantedTtl) * 1000;
    const elapsed = (t.grantedTtl - t.ttl) * 1000;
    out.set(name, {
      lease: node.kv.lease,
      ttlMs,
      managed: t.grantedTtl * 1000 > ttlMs,
      silenceLower: Math.max(0, elapsed - QUORUM.granularityMs),
      silenceUpper: elapsed + QUORUM.granularityMs,
      ...(node.value.renewingSince !== undefined ? { renewingSince: node.value.renewingSince } : {}),
    });
  }
  return out;
}

export function isRenewing(r: Renewal | undefined): boolean {
  return r !== undefined && r.silenceUpper < renewingWithinMs(r.ttlMs);
}

/**
 * Renewing, and for G at least since the server stamped its last return (a record without a
 * stamp predates it). Only settled members make the majority an expiry needs: an agent's
 * confirmation lasts G after its oldest question, and a member that voted "cannot reach"
 * settles only G after it came back (docs/fencing.md).
 */
export function isSettled(r: Renewal | undefined, now: number): boolean {
  return isRenewing(r) && (r!.renewingSince === undefined || now >= settledFrom(r!.renewingSince));
}

/** Members: nodes with a status that is not lost and not removed by an operator, each with its peer info. */
export function currentMembers(view: ClusterView, renewals: Map<string, Renewal>, previous: MembershipVersion | undefined): Member[] {
  const before = new Map((previous?.members ?? []).map((m) => [m.node, m]));
  const out: Member[] = [];
  for (const [name, st] of [...view.statuses].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (st.value.state === 'lost') continue;
    const op = view.nodeOps.get(name)?.value;
    if (op && op.removeTenure > 0 && st.value.tenure <= op.removeTenure) continue;
    const node = view.nodes.get(name)?.value;
    const was = before.get(name);
    const ttlSeconds = node?.leaseTtlSeconds ?? (renewals.get(name) ? renewals.get(name)!.ttlMs / 1000 : (was?.ttlSeconds ?? 10));
    const peer = node?.peer ?? was?.peer;
    out.push({ node: name, ttlSeconds: Math.max(1, Math.round(ttlSeconds)), ...(peer ? { peer } : {}) });
  }
  return out;
}

/** The versions an agent may still hold: the current one, and each superseded less than W ago. */
export function versionsInWindow(versions: readonly MembershipVersion[], now: number): MembershipVersion[] {
  const maxTtlMs = Math.max(0, ...versions.flatMap((v) => v.members.map((m) => m.ttlSeconds * 1000)));
  const horizon = now - historyWindowMs(maxTtlMs);
  return versions.filter((_, i) => i === versions.length - 1 || versions[i + 1]!.since >= horizon);
}

/**
 * A version of the window that forbids an expiry now, or undefined when none does. The current
 * version needs a strict majority renewing (the rule as stated). An older one — a copy an agent
 * may still hold — only needs its silent members to be no majority of it: an agent counts a
 * strict majority of its copy confirming the outage, and a renewing member never confirms, so
 * with the silent ones short of a majority no copy of that version can gather one. (Requiring
 * a renewing majority there too would hold every loss during the window after a cluster forms:
 * the versions {n1}, {n1, n3} of nodes registering one by one.)
 */
export function versionWithoutMajority(m: Membership, renewals: Map<string, Renewal>, now: number): { version: MembershipVersion; settled: number } | undefined {
  const versions = versionsInWindow(m.versions, now);
  for (const [i, v] of versions.entries()) {
    const settled = v.members.filter((x) => isSettled(renewals.get(x.node), now)).length;
    const current = i === versions.length - 1;
    const forbids = current ? !isMajority(settled, v.members.length) : v.members.length > 0 && isMajority(v.members.length - settled, v.members.length);
    if (forbids) return { version: v, settled };
  }
  return undefined;
}

/**
 * The membership history as it should be now: a new version when the members changed (the
 * versions out of the window dropped then), the hold set when a node is due to expire but
 * the current version lacks a renewing majority, lifted when it has one again. Only those
 * changes write (a converged system writes nothing); judging ignores versions out of the
 * window whether or not they were dropped yet. Undefined: unchanged.
 */
export function nextMembership(prev: Membership | undefined, members: Member[], renewals: Map<string, Renewal>, now: number): Membership | undefined {
  const last = prev?.versions.at(-1);
  if (!prev && members.length === 0) return undefined;
  let versions = prev?.versions ?? [];
  if (!last || JSON.stringify(last.members) !== JSON.stringify(members)) versions = versionsInWindow([...versions, { version: (last?.version ?? 0) + 1, since: now, members }], now);
  const current = versions.at(-1)!;
  const renewing = current.members.filter((x) => isRenewing(renewals.get(x.node))).length;
  const majority = isMajority(renewing, current.members.length);
  const due = [...renewals.values()].some((r) => r.managed && r.silenceLower >= r.ttlMs);
  const next: Membership = { versions };
  if (prev?.heldSince !== undefined && !majority) next.heldSince = prev.heldSince;
  else if (!majority && due) next.heldSince = now;
  else if (prev?.heldSince !== undefined) next.liftedAt = now;
  else if (prev?.liftedAt !== undefined) next.liftedAt = prev.liftedAt;
  return prev && JSON.stringify(prev) === JSON.stringify(next) ? undefined : next;
}

export interface QuorumPlan {
  txns: Txn[];
  at?: number;
}

/**
 * Per node with a lease this controller expires: past its TTL of silence, expire it (its
 * record deleted and its status lost, in one write) when the rule allows, or mark it
 * unreachable when it does not; an unreachable node renewing again is ready again, under the
 * same tenure: nothing of it was replaced, so nothing restarts.
 */
export function planQuorum(view: ClusterView, membership: Fact<'membership'> | undefined, renewals: Map<string, Renewal>, now: number): QuorumPlan {
  const key = buildKey('membership', 'nodes');
  const members = currentMembers(view, renewals, membership?.value.versions.at(-1));
  const next = nextMembership(membership?.value, members, renewals, now);
  // Membership first: expiries are judged against the history as written.
  if (next) return { txns: [{ compares: [unchanged(membership, key)], ops: [putFact('membership', ['nodes'], next)] }], at: now };
  if (!membership) return { txns: [] };
  const m = membership.value;
  const lacking = versionWithoutMajority(m, renewals, now);
  const txns: Txn[] = [];
  let at: number | undefined;
  const wake = (t: number) => (at = Math.min(at ?? Infinity, t));
  for (const [name, r] of renewals) {
    const node = view.nodes.get(name)!;
    const status = view.statuses.get(name);
    const tenure = node.kv.createRevision;
    const sameTenureStatus = status && status.value.tenure === tenure;
    if (sameTenureStatus && status.value.state === 'unreachable') {
      wake(now + HOLD_POLL_MS);
      if (isRenewing(r)) txns.push(returned(node, status, m, now));
      else if (r.managed && r.silenceLower >= r.ttlMs && !lacking && !(m.liftedAt !== undefined && now < m.liftedAt + r.ttlMs)) txns.push(expire(node, status, membership, r, now));
      else if (m.liftedAt !== undefined && now < m.liftedAt + r.ttlMs) wake(m.liftedAt + r.ttlMs);
      continue;
    }
    if (!r.managed) continue;
    if (r.silenceLower < r.ttlMs) {
      wake(now + r.ttlMs - r.silenceLower);
      continue;
    }
    const afterLift = m.liftedAt !== undefined && now < m.liftedAt + r.ttlMs;
    if (!lacking && !afterLift) txns.push(expire(node, status, membership, r, now));
    else if (sameTenureStatus && status.value.state === 'ready') txns.push(unreachable(node, status, membership, lacking, now));
    wake(afterLift ? m.liftedAt! + r.ttlMs : now + HOLD_POLL_MS);
  }
  return { txns, ...(at !== undefined ? { at } : {}) };
}

function expire(node: Fact<'node'>, status: Fact<'nodeStatus'> | undefined, membership: Fact<'membership'>, r: Renewal, now: number): Txn {
  const name = node.value.name;
  const reason = `silent for at least ${Math.round(r.silenceLower / 1000)} s (lease TTL ${r.ttlMs / 1000} s) while a majority of every membership version renews: this node is cut off, not the control plane`;
  const d = decide({
    kind: 'node',
    subject: name,
    controller: NODE_CONTROLLER,
    action: 'expired',
    tag: 'node-lost',
    at: now,
    evidence: [evidenceOf(node), evidenceOf(membership), ...(status ? [evidenceOf(status)] : [])],
    cause: causedByFact(node),
    reasons: [reason, `its replicas are declared lost after ${QUORUM.lostGraceMs} ms at least (docs/fencing.md)`],
  });
  const statusKey = buildKey('nodeStatus', name);
  return {
    compares: [unchanged(node), unchanged(membership), unchanged(status, statusKey), ...d.compares],
    // The record goes with the lease, revoked right after (expiredLeases): the agent's key is
    // never deleted by another writer, and from this write on the keepalive route refuses it.
    ops: [putFact('nodeStatus', [name], { node: name, tenure: node.kv.createRevision, state: 'lost', since: now, reason: 'its lease expired (node controller)', expired: true }), ...d.ops],
  };
}

function unreachable(node: Fact<'node'>, status: Fact<'nodeStatus'>, membership: Fact<'membership'>, lacking: ReturnType<typeof versionWithoutMajority>, now: number): Txn {
  const name = node.value.name;
  const why = lacking
    ? `only ${lacking.settled} of the ${lacking.version.members.length} members of membership version ${lacking.version.version} renew their leases (for ${QUORUM.settleMs / 1000} s at least): a majority is silent or just came back, so the control plane (or the way to it) may be what was down`
    : 'the hold lifted less than a lease ago: nodes get a full lease from the lift';
  const d = decide({
    kind: 'node',
    subject: name,
    controller: NODE_CONTROLLER,
    action: 'unreachable (hold)',
    tag: 'node-unreachable',
    at: now,
    evidence: [evidenceOf(node), evidenceOf(status), evidenceOf(membership)],
    cause: causedByFact(membership),
    reasons: [why, 'nothing is expired or replaced while the majority is silent; agents of a majority keep their workloads running (docs/fencing.md)'],
  });
  return {
    compares: [unchanged(node), unchanged(status), unchanged(membership), ...d.compares],
    ops: [putFact('nodeStatus', [name], { node: name, tenure: node.kv.createRevision, state: 'unreachable', since: now, reason: 'silent while a majority is silent (hold)' }), ...d.ops],
  };
}

function returned(node: Fact<'node'>, status: Fact<'nodeStatus'>, m: Membership, now: number): Txn {
  const name = node.value.name;
  const d = decide({
    kind: 'node',
    subject: name,
    controller: NODE_CONTROLLER,
    action: 'ready',
    tag: 'node-ready',
    at: now,
    evidence: [evidenceOf(node), evidenceOf(status)],
    cause: causedByFact(node),
    reasons: [`renews its lease again under the same tenure ${node.kv.createRevision} (unreachable since ${new Date(status.value.since).toISOString()}${m.heldSince === undefined ? '' : ', hold still on'}); nothing of it was replaced, nothing restarts`],
  });
  return {
    compares: [sameTenure(node.key, node.kv.createRevision), unchanged(status), ...d.compares],
    ops: [putFact('nodeStatus', [name], { node: name, tenure: node.kv.createRevision, state: 'ready', since: now, reason: 'renewing again after the hold' }), ...d.ops],
  };
}


/**
 * Leases this controller expired (status lost, `expired`, under the record's own tenure) whose
 * record is still there: revoke them — the store deletes the record with its lease. Run after
 * every commit, so a crash between the two writes is finished by the next step.
 */
export async function revokeExpired(store: Store, view: ClusterView): Promise<void> {
  for (const [name, node] of view.nodes) {
    const st = view.statuses.get(name)?.value;
    if (node.kv.lease !== 0 && st?.state === 'lost' && st.expired && st.tenure === node.kv.createRevision) await store.revokeLease(node.kv.lease).catch(() => undefined);
  }
}
