import { buildKey, prefixOf } from '../../core/keys.js';
import { IPV4_PATTERN, type NetAddrs, type NetPolicy, type NetworkRules, type ReplicaPolicy } from '../../core/model/facts.js';
import { allowancesFor, clientsOf } from '../../core/model/network.js';
import { NETWORK_LIMITS } from '../../core/model/network-limits.js';
import type { AllowRule } from '../../core/model/service.js';
import type { KeyValue } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { deleteKey, putFact, sameTenure, uniqueCompares, unchanged, type Fact } from '../facts.js';
import { absentEvidence, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { groupBy, indexBy, listEvery } from './view.js';
import { commitEach, type Write } from '../write.js';
import { afterCommits } from '../retry.js';
import { onlyUsageMoved } from './usage-report.js';

export const NETWORK_CONTROLLER = 'network';
/** The store's bound on compares per txn (etcd's --max-txn-ops); one goes to the decision. */
const MAX_COMPARES = 127;
const LIVE_STATES = new Set(['pending', 'pulling', 'init', 'starting', 'running', 'stopping']);

/** One client replica whose address a policy may admit, with the facts that make it admissible. */
export interface ClientAddress {
  replica: string;
  service: string;
  address: string;
  /** Observation, placement, assignment, node status; the node's tenure is compared separately. */
  facts: Fact<'observed' | 'placement' | 'assigned' | 'nodeStatus'>[];
  node: { key: string; tenure: number };
}

/** Everything one step decides on, read in one go. */
export interface NetworkView {
  services: Map<string, Fact<'service'>>;
  assignments: Fact<'assigned'>[];
  placements: Map<string, Fact<'placement'>>;
  observations: Fact<'observed'>[];
  nodes: Map<string, Fact<'node'>>;
  statuses: Map<string, Fact<'nodeStatus'>>;
  records: Map<string, Fact<'network'>>;
  policies: Map<string, Fact<'netPolicy'>>;
  addressSets: Map<string, Fact<'netAddrs'>>;
  /** Assignments per node, sorted by replica id. */
  byNode: Map<string, Fact<'assigned'>[]>;
}

export async function readNetworkView(ctx: Pick<StepContext, 'store'>): Promise<NetworkView> {
  const { store } = ctx;
  const [services, assignments, placements, observations, nodes, statuses, records, policies, addressSets] = await listEvery(
    store, 'service', 'assigned', 'placement', 'observed', 'node', 'nodeStatus', 'network', 'netPolicy', 'netAddrs',
  );
  const byNode = groupBy([...assignments].sort((x, y) => (x.value.replica < y.value.replica ? -1 : 1)), (a) => a.value.node);
  return {
    services: indexBy(services, (s) => s.value.name),
    assignments,
    byNode,
    placements: indexBy(placements, (p) => p.value.replica),
    observations,
    nodes: indexBy(nodes, (n) => n.value.name),
    statuses: indexBy(statuses, (s) => s.value.node),
    records: indexBy(records, (r) => r.value.node),
    policies: indexBy(policies, (p) => p.value.service),
    addressSets: indexBy(addressSets, (a) => a.value.service),
  };
}

/**
 * Addresses a policy may admit, by service: replicas with an admissible observation (rule 5:
 * current tenure, current placement, ready node) in a live state that reports an address. A
 * replica that exited, was replaced or lost its node drops out here, at once.
 */
export function clientAddresses(view: NetworkView): Map<string, ClientAddress[]> {
  const assigned = indexBy(view.assignments, (a) => `${a.value.node}/${a.value.replica}`);
  const out = new Map<string, ClientAddress[]>();
  for (const o of view.observations) {
    const { replica, node, tenure, address, state, service } = o.value;
    if (address === undefined || !LIVE_STATES.has(state)) continue;
    const p = view.placements.get(replica);
    const a = assigned.get(`${node}/${replica}`);
    const n = view.nodes.get(node);
    const st = view.statuses.get(node);
    if (!p || !a || !n || !st) continue;
    if (p.value.node !== node || p.value.tenure !== tenure || a.value.tenure !== tenure || n.kv.createRevision !== tenure) continue;
    if (st.value.state !== 'ready' || st.value.tenure !== tenure) continue;
    const list = out.get(service) ?? [];
    list.push({ replica, service, address, facts: [o, p, a, st], node: { key: n.key, tenure } });
    out.set(service, list);
  }
  return out;
}

/** The policy in force for a service's replicas, with the fact that justifies it. */
export interface InForce {
  allow: AllowRule[];
  source: NetPolicy['source'];
  /** The service's spec, or (the service deleted) the assignment whose placed spec it is. */
  fact: Fact<'service'> | Fact<'assigned'>;
}

/**
 * Every service with a replica assigned somewhere and a policy in force: its current spec's
 * (a policy change rolls nothing), else, once deleted, the spec its first replica (by id) was
 * placed with.
 */
export function policiesInForce(view: NetworkView): Map<string, InForce> {
  const out = new Map<string, InForce>();
  const sorted = [...view.assignments].sort((x, y) => (x.value.replica < y.value.replica ? -1 : 1));
  for (const a of sorted) {
    const name = a.value.service;
    if (out.has(name)) continue;
    const current = view.services.get(name);
    const inForce: InForce = current ? { allow: current.value.network.allow, source: 'spec', fact: current } : { allow: a.value.spec.network.allow, source: 'placed', fact: a };
    out.set(name, inForce);
  }
  for (const [name, p] of out) if (p.allow.length === 0) out.delete(name);
  return out;
}

/** A client service's address set: distinct IPv4 addresses, sorted, at most NETWORK_LIMITS.maxAddresses. */
export interface AddressPlan {
  addresses: string[];
  total: number;
  /** The clients whose addresses are listed (their facts justify the write). */
  used: ClientAddress[];
}

export function planAddresses(clients: readonly ClientAddress[]): AddressPlan {
  const byAddress = new Map<string, ClientAddress>();
  for (const c of [...clients].sort((x, y) => (x.replica < y.replica ? -1 : 1))) {
    if (IPV4_PATTERN.test(c.address) && !byAddress.has(c.address)) byAddress.set(c.address, c);
  }
  const all = [...byAddress.keys()].sort();
  const addresses = all.slice(0, NETWORK_LIMITS.maxAddresses);
  return { addresses, total: all.length, used: addresses.map((a) => byAddress.get(a)!) };
}

export interface NodePlan {
  rules: NetworkRules['replicas'];
  /** The facts that decided each replica's policy (services, or placed assignments). */
  services: { key: string; kv: KeyValue }[];
}

/** The rule set of one node: every replica assigned there, open or policed by its service's policy. */
export function planNode(view: NetworkView, node: string, inForce: Map<string, InForce>): NodePlan {
  const services = new Map<string, { key: string; kv: KeyValue }>();
  const rules: ReplicaPolicy[] = [];
  for (const a of view.byNode.get(node) ?? []) {
    const current = view.services.get(a.value.service);
    if (current) services.set(current.key, current);
    const p = inForce.get(a.value.service);
    if (p) services.set(p.fact.key, p.fact);
    rules.push({ replica: a.value.replica, service: a.value.service, policy: p ? 'allow' : 'open' });
  }
  return { rules, services: [...services.values()] };
}

/** What a value says, without its time: equal text = nothing to write. */
export function rulesText(replicas: unknown): string {
  return JSON.stringify(replicas);
}

/** One line per replica whose policing changed, for the decision's reasons. */
export function describeChange(before: NetworkRules['replicas'], after: NetworkRules['replicas']): string[] {
  const old = new Map(before.map((r) => [r.replica, r]));
  const out: string[] = [];
  for (const r of after) {
    const prev = old.get(r.replica);
    old.delete(r.replica);
    if (prev && prev.policy === r.policy && prev.service === r.service) continue;
    out.push(`${r.replica} (${r.service}): ${prev ? '' : 'new: '}${r.policy === 'open' ? 'open, no policy' : `default deny; the policy of ${r.service} (/netpolicy/${r.service})`}`);
  }
  for (const r of old.values()) out.push(`${r.replica} (${r.service}): no longer on the node`);
  return out;
}

/** An address set's change: how many, with the addresses added and removed (clipped). */
export function describeAddresses(service: string, before: readonly string[], after: AddressPlan): string[] {
  const was = new Set(before);
  const now = new Set(after.addresses);
  const delta = [...after.addresses.filter((a) => !was.has(a)).map((a) => `+${a}`), ...before.filter((a) => !now.has(a)).map((a) => `-${a}`)];
  const shown = delta.slice(0, 32).join(' ') + (delta.length > 32 ? ` and ${delta.length - 32} more` : '');
  const line = `${service}: ${after.addresses.length} address(es)${shown ? ` (${shown})` : ''}`;
  return after.total > after.addresses.length ? [line, `${after.total - after.addresses.length} address(es) past the limit of ${NETWORK_LIMITS.maxAddresses} not listed`] : [line];
}

/**
 * The network controller: services' `allow` policies → what each node's agent enforces with
 * nftables, as three kinds of value, none of which copies another (so each has a bound):
 * `/network/<node>` says which of the node's replicas are policed, `/netpolicy/<service>` the
 * policy in force for a policed service, `/netaddrs/<client>` the current addresses of a
 * client service's replicas (admissible observations), one set shared by every policy naming
 * it. Writes only on change, each with a decision, in a txn that compares the facts behind
 * it (an address set compares the facts behind every address it lists: a replaced replica's
 * address is never written back from a stale read).
 */
export const networkController: Controller = {
  name: NETWORK_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('assigned'), prefixOf('placement'), prefixOf('observed'), prefixOf('node'), prefixOf('nodeStatus'), prefixOf('network'), prefixOf('netPolicy'), prefixOf('netAddrs')],
  // A report that moved only its usage figure changes nothing it decides on.
  ignores: onlyUsageMoved,
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    const view = await readNetworkView(ctx);
    const inForce = policiesInForce(view);
    const clients = clientAddresses(view);
    const wanted = new Set([...inForce.values()].flatMap((p) => clientsOf(p.allow)));
    const policyNames = new Set([...inForce.keys(), ...view.policies.keys()]);
    const setNames = new Set([...wanted, ...view.addressSets.keys()]);
    const nodes = new Set([...view.assignments.map((a) => a.value.node), ...view.records.keys()]);
    const writes = [
      ...[...policyNames].sort().flatMap((s) => planPolicyWrite(ctx, view, s, inForce.get(s)) ?? []),
      ...[...setNames].sort().flatMap((s) => planAddressWrite(ctx, view, s, wanted.has(s) ? planAddresses(clients.get(s) ?? []) : undefined) ?? []),
      ...[...nodes].sort().flatMap((node) => planWrite(ctx, view, node, inForce) ?? []),
    ];
    return afterCommits(ctx.now, await commitEach(ctx.store, writes));
  },
};

function latestOf(read: readonly { key: string; kv: KeyValue }[]): { key: string; kv: KeyValue } | undefined {
  return read.reduce<{ key: string; kv: KeyValue } | undefined>((m, f) => (!m || f.kv.modRevision > m.kv.modRevision ? f : m), undefined);
}

/** `/netpolicy/<service>`: written while a replica of the service is policed, deleted after. */
function planPolicyWrite(ctx: StepContext, view: NetworkView, service: string, p: InForce | undefined): Write | undefined {
  const key = buildKey('netPolicy', service);
  const record = view.policies.get(service);
  if (!p ? !record : record && rulesText([record.value.allow, record.value.source]) === rulesText([p.allow, p.source])) return undefined;
  // A named port a running replica does not declare admits nothing there: say so (CCA-E0423).
  const notes = p ? [...new Set(view.assignments.filter((a) => a.value.service === service).flatMap((a) => allowancesFor(service, a.value.replica, p.allow, a.value.spec.ports, () => []).notes))] : [];
  const current = view.services.get(service);
  const d = decide({
    kind: 'service',
    subject: service,
    controller: NETWORK_CONTROLLER,
    action: p ? 'network policy updated' : 'network policy removed',
    tag: `netpolicy-${record?.kv.modRevision ?? 0}`,
    at: ctx.now,
    evidence: [record ? evidenceOf(record) : absentEvidence(key), ...(p ? [evidenceOf(p.fact)] : current ? [evidenceOf(current)] : [])],
    cause: causedByFact(p?.fact ?? current ?? record ?? { key, modRevision: 0 }),
    reasons: [
      p ? `${service}: default deny; allows ${p.allow.map((x) => `${x.service}${x.port === undefined ? '' : ` on ${x.port}`}`).join(', ')}${p.source === 'placed' ? ' (the policy its replicas were placed with: the service is deleted)' : ''}` : `${service}: no replica is policed`,
      ...notes,
    ].slice(0, 16),
  });
  const compares = uniqueCompares([unchanged(record, key), p ? unchanged(p.fact) : unchanged(current, buildKey('service', service))]);
  const next: NetPolicy | undefined = p && { service, allow: p.allow, source: p.source, at: ctx.now };
  return { compares: [...compares, ...d.compares], ops: [next ? putFact('netPolicy', [service], next) : deleteKey(key), ...d.ops] };
}

/** `/netaddrs/<client>`: written while a policy names the service, deleted after. */
function planAddressWrite(ctx: StepContext, view: NetworkView, service: string, plan: AddressPlan | undefined): Write | undefined {
  const key = buildKey('netAddrs', service);
  const record = view.addressSets.get(service);
  if (!plan ? !record : record && rulesText([record.value.addresses, record.value.total]) === rulesText([plan.addresses, plan.total])) return undefined;
  const read = [...(plan?.used ?? []).flatMap((c) => c.facts)];
  const d = decide({
    kind: 'service',
    subject: service,
    controller: NETWORK_CONTROLLER,
    action: plan ? 'address set updated' : 'address set removed',
    tag: `netaddrs-${record?.kv.modRevision ?? 0}`,
    at: ctx.now,
    evidence: [record ? evidenceOf(record) : absentEvidence(key), ...(plan?.used ?? []).slice(0, 32).map((c) => evidenceOf(c.facts[0]!))],
    cause: causedByFact(latestOf(read) ?? record ?? { key, modRevision: 0 }),
    reasons: plan ? describeAddresses(service, record?.value.addresses ?? [], plan) : [`${service}: no policy names it`],
  });
  // The store bounds a txn's compares: the set's own record first, then the listed clients' facts.
  const compares = uniqueCompares([unchanged(record, key), ...(plan?.used ?? []).flatMap((c) => [...c.facts.map((f) => unchanged(f)), sameTenure(c.node.key, c.node.tenure)])]).slice(0, MAX_COMPARES);
  const next: NetAddrs | undefined = plan && { service, addresses: plan.addresses, total: plan.total, at: ctx.now };
  return { compares: [...compares, ...d.compares], ops: [next ? putFact('netAddrs', [service], next) : deleteKey(key), ...d.ops] };
}

function planWrite(ctx: StepContext, view: NetworkView, node: string, inForce: Map<string, InForce>): Write | undefined {
  const key = buildKey('network', node);
  const record = view.records.get(node);
  const plan = planNode(view, node, inForce);
  const before = record?.value.replicas ?? [];
  const here = view.byNode.get(node) ?? [];
  // Nothing on the node is policed, now or in the spec it was placed with: the agent's default (open) is right.
  const needed = plan.rules.some((r) => r.policy === 'allow') || here.some((a) => a.value.spec.network.allow.length > 0);
  const gone = !needed || (plan.rules.length === 0 && !view.nodes.has(node));
  if (gone ? !record : record ? rulesText(before) === rulesText(plan.rules) : plan.rules.length === 0) return undefined;
  const read: { key: string; kv: KeyValue }[] = [...here, ...plan.services];
  const reasons = gone ? [needed ? `node ${node} is gone and has no replicas` : `no replica on node ${node} has a policy: every one is open`] : describeChange(before, plan.rules);
  const d = decide({
    kind: 'node',
    subject: node,
    controller: NETWORK_CONTROLLER,
    action: gone ? 'network rules removed' : 'network rules updated',
    // The mod revision replaced makes the id unique even for two changes in one millisecond.
    tag: `net-${record?.kv.modRevision ?? 0}`,
    at: ctx.now,
    evidence: [record ? evidenceOf(record) : absentEvidence(key), ...plan.services.slice(0, 32).map(evidenceOf)],
    cause: causedByFact(latestOf(read) ?? record ?? { key, modRevision: 0 }),
    reasons: reasons.slice(0, 64),
  });
  const compares = uniqueCompares([unchanged(record, key), ...plan.services.map((s) => unchanged(s)), ...here.map((a) => unchanged(a))]).slice(0, MAX_COMPARES);
  const next: NetworkRules = { node, replicas: plan.rules, at: ctx.now };
  return { compares: [...compares, ...d.compares], ops: [gone ? deleteKey(key) : putFact('network', [node], next), ...d.ops] };
}
