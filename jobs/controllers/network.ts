import { makeDiagnostic } from '../../core/diagnostics/error.js';
import { buildKey, prefixOf } from '../../core/keys.js';
import type { NetworkRule, NetworkRules, ReplicaPolicy } from '../../core/model/facts.js';
import type { ServiceSpec } from '../../core/model/service.js';
import type { KeyValue } from '../../db/store.js';
import type { Controller, StepContext, Wakeup } from '../controller.js';
import { deleteKey, putFact, sameTenure, uniqueCompares, unchanged, type Fact } from '../facts.js';
import { absentEvidence, causedByFact, decide, evidenceOf } from '../decisions/record.js';
import { groupBy, indexBy, listEvery } from './view.js';
import { commitEach, type Write } from '../write.js';
import { afterCommits } from '../retry.js';

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
  /** Assignments per node, sorted by replica id. */
  byNode: Map<string, Fact<'assigned'>[]>;
}

export async function readNetworkView(ctx: Pick<StepContext, 'store'>): Promise<NetworkView> {
  const { store } = ctx;
  const [services, assignments, placements, observations, nodes, statuses, records] = await listEvery(store, 'service', 'assigned', 'placement', 'observed', 'node', 'nodeStatus', 'network');
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

/** The policy in force for a replica: the service's current spec (a policy change rolls nothing), else what it was placed with. */
function policySpec(view: NetworkView, a: Fact<'assigned'>): { spec: ServiceSpec; fact?: Fact<'service'> } {
  const current = view.services.get(a.value.service);
  return current ? { spec: current.value, fact: current } : { spec: a.value.spec };
}

export interface NodePlan {
  rules: NetworkRules['replicas'];
  /** Client addresses admitted anywhere in the set (their facts justify the write). */
  used: ClientAddress[];
  services: Fact<'service'>[];
  notes: string[];
}

/** The rule set of one node: every replica assigned there, open or with its allowances. */
export function planNode(view: NetworkView, node: string, clients: Map<string, ClientAddress[]>): NodePlan {
  const used = new Map<string, ClientAddress>();
  const services = new Map<string, Fact<'service'>>();
  const notes: string[] = [];
  const rules: ReplicaPolicy[] = [];
  for (const a of view.byNode.get(node) ?? []) {
    const { spec, fact } = policySpec(view, a);
    if (fact) services.set(fact.value.name, fact);
    if (spec.network.allow.length === 0) {
      rules.push({ replica: a.value.replica, service: a.value.service, policy: 'open', rules: [] });
      continue;
    }
    const byPort = new Map<string, { rule: NetworkRule; from: Set<string>; services: Set<string> }>();
    for (const allow of spec.network.allow) {
      let port: number | undefined;
      let protocol: 'tcp' | 'udp' | undefined;
      if (typeof allow.port === 'string') {
        // The running replica's spec says where it listens; the policy names the port.
        const declared = a.value.spec.ports.find((p) => p.name === allow.port);
        if (!declared) {
          const d = makeDiagnostic('CCA-E0423', { service: spec.name, port: allow.port, replica: a.value.replica });
          notes.push(`${d.code} ${d.message}`);
          continue;
        }
        port = declared.container;
        protocol = declared.protocol;
      } else if (typeof allow.port === 'number') {
        port = allow.port;
        protocol = a.value.spec.ports.find((p) => p.container === allow.port)?.protocol ?? 'tcp';
      }
      const key = `${port ?? '*'}/${protocol ?? '*'}`;
      const entry = byPort.get(key) ?? { rule: { ...(port === undefined ? {} : { port }), ...(protocol === undefined ? {} : { protocol }), services: [], from: [] }, from: new Set<string>(), services: new Set<string>() };
      entry.services.add(allow.service);
      for (const c of clients.get(allow.service) ?? []) {
        entry.from.add(c.address);
        used.set(c.replica, c);
      }
      byPort.set(key, entry);
    }
    const list = [...byPort.values()]
      .map((e) => ({ ...e.rule, services: [...e.services].sort(), from: [...e.from].sort() }))
      .sort((x, y) => (x.port ?? 0) - (y.port ?? 0) || (x.protocol ?? '').localeCompare(y.protocol ?? ''));
    rules.push({ replica: a.value.replica, service: a.value.service, policy: 'allow', rules: list });
  }
  return { rules, used: [...used.values()], services: [...services.values()], notes };
}

/** What a rule set says, without its time: equal text = nothing to write. */
export function rulesText(replicas: NetworkRules['replicas']): string {
  return JSON.stringify(replicas);
}

/** One line per replica whose allowances changed, for the decision's reasons. */
export function describeChange(before: NetworkRules['replicas'], after: NetworkRules['replicas']): string[] {
  const old = new Map(before.map((r) => [r.replica, r]));
  const out: string[] = [];
  const show = (r: NetworkRule) => `${r.protocol ?? 'any'}/${r.port ?? 'any'} from ${r.services.join(', ')}`;
  for (const r of after) {
    const prev = old.get(r.replica);
    old.delete(r.replica);
    if (prev && rulesText([prev]) === rulesText([r])) continue;
    if (r.policy === 'open') {
      out.push(`${r.replica} (${r.service}): open, no policy`);
      continue;
    }
    const was = new Map((prev?.rules ?? []).map((x) => [`${x.port}/${x.protocol}`, new Set(x.from)]));
    const parts = r.rules.map((x) => {
      const w = was.get(`${x.port}/${x.protocol}`) ?? new Set<string>();
      const added = x.from.filter((f) => !w.has(f));
      const removed = [...w].filter((f) => !x.from.includes(f));
      const delta = [...added.map((f) => `+${f}`), ...removed.map((f) => `-${f}`)].join(' ');
      return `${show(x)}: ${x.from.length} address(es)${delta ? ` (${delta})` : ''}`;
    });
    out.push(`${r.replica} (${r.service}): ${prev ? '' : 'new: '}default deny; ${parts.join('; ') || 'nothing allowed'}`);
  }
  for (const r of old.values()) out.push(`${r.replica} (${r.service}): no longer on the node`);
  return out;
}

/**
 * The network controller: services' `allow` policies → `/network/<node>`, the rule set each
 * node's agent applies with nftables. A service with a policy admits only the current
 * addresses of its allowed clients' replicas (admissible observations); one without a policy
 * is open. Writes only on change, each with a decision saying what changed, in one txn that
 * compares the facts behind every address it admits (a replaced replica's address is never
 * written back from a stale read).
 */
export const networkController: Controller = {
  name: NETWORK_CONTROLLER,
  watches: [prefixOf('service'), prefixOf('assigned'), prefixOf('placement'), prefixOf('observed'), prefixOf('node'), prefixOf('nodeStatus'), prefixOf('network')],
  async reconcile(ctx: StepContext): Promise<Wakeup> {
    const view = await readNetworkView(ctx);
    const clients = clientAddresses(view);
    const nodes = new Set([...view.assignments.map((a) => a.value.node), ...view.records.keys()]);
    const writes = [...nodes].sort().flatMap((node) => planWrite(ctx, view, node, clients) ?? []);
    return afterCommits(ctx.now, await commitEach(ctx.store, writes));
  },
};

function planWrite(ctx: StepContext, view: NetworkView, node: string, clients: Map<string, ClientAddress[]>): Write | undefined {
  const key = buildKey('network', node);
  const record = view.records.get(node);
  const plan = planNode(view, node, clients);
  const before = record?.value.replicas ?? [];
  const here = view.byNode.get(node) ?? [];
  // Nothing on the node is policed, now or in the spec it was placed with: the agent's default (open) is right.
  const needed = plan.rules.some((r) => r.policy === 'allow') || here.some((a) => a.value.spec.network.allow.length > 0);
  const gone = !needed || (plan.rules.length === 0 && !view.nodes.has(node));
  if (gone ? !record : record ? rulesText(before) === rulesText(plan.rules) : plan.rules.length === 0) return undefined;
  const read: { key: string; kv: KeyValue }[] = [...here, ...plan.services, ...plan.used.flatMap((c) => c.facts)];
  const latest = read.reduce<{ key: string; kv: KeyValue } | undefined>((m, f) => (!m || f.kv.modRevision > m.kv.modRevision ? f : m), undefined);
  const reasons = gone ? [needed ? `node ${node} is gone and has no replicas` : `no replica on node ${node} has a policy: every one is open`] : describeChange(before, plan.rules);
  const d = decide({
    kind: 'node',
    subject: node,
    controller: NETWORK_CONTROLLER,
    action: gone ? 'network rules removed' : 'network rules updated',
    // The mod revision replaced makes the id unique even for two changes in one millisecond.
    tag: `net-${record?.kv.modRevision ?? 0}`,
    at: ctx.now,
    evidence: [record ? evidenceOf(record) : absentEvidence(key), ...plan.services.slice(0, 16).map(evidenceOf), ...plan.used.slice(0, 32).map((c) => evidenceOf(c.facts[0]!))],
    cause: causedByFact(latest ?? record ?? { key, modRevision: 0 }),
    reasons: [...reasons, ...plan.notes].slice(0, 64),
  });
  const compares = uniqueCompares([
    unchanged(record, key),
    ...plan.used.flatMap((c) => [...c.facts.map((f) => unchanged(f)), sameTenure(c.node.key, c.node.tenure)]),
    ...plan.services.map((s) => unchanged(s)),
    ...here.map((a) => unchanged(a)),
  ]).slice(0, MAX_COMPARES);
  const next: NetworkRules = { node, replicas: plan.rules, at: ctx.now };
  return { compares: [...compares, ...d.compares], ops: [gone ? deleteKey(key) : putFact('network', [node], next), ...d.ops] };
}

