import { prefixOf } from '../../core/keys.js';
import type { NetworkRule } from '../../core/model/facts.js';
import { enforcedFor, type NetworkBundle } from '../../core/model/network.js';
import type { ServiceSpecInput } from '../../core/model/service.js';
import type { Store } from '../../db/store.js';
import { NETWORK_CONTROLLER } from '../controllers/network.js';
import { listFacts } from '../facts.js';
import { Rng } from './rng.js';
import { expectThat, result, type ScenarioResult } from './scenarios.js';
import { SimWorld, type SimOptions } from './world.js';

const Mi = 1024 ** 2;
const Gi = 1024 ** 3;

export const NETWORK_INVARIANTS = {
  /** After the network controller's step, each rule admits exactly the current clients' addresses. */
  exact: 'network-rules-exact-after-step',
  /** At every instant, an admitted address belongs to a replica of a service the rule names. */
  noLeak: 'network-rules-admit-only-allowed-services',
  /** At quiescence, the rules match what actually runs. */
  converged: 'network-rules-match-running-replicas',
} as const;

const LIVE = new Set(['pending', 'pulling', 'init', 'starting', 'running', 'stopping']);

/**
 * Addresses of each service's current replicas, computed from the store on its own terms
 * (not the controller's code): an observation in a live state with an address, under the
 * tenure of a registered node that is ready, for the replica's current placement and assignment.
 */
export async function currentAddresses(store: Store): Promise<Map<string, Set<string>>> {
  const [observed, placements, assigned, nodes, statuses] = await Promise.all([
    listFacts(store, 'observed', prefixOf('observed')),
    listFacts(store, 'placement', prefixOf('placement')),
    listFacts(store, 'assigned', prefixOf('assigned')),
    listFacts(store, 'node', prefixOf('node')),
    listFacts(store, 'nodeStatus', prefixOf('nodeStatus')),
  ]);
  const out = new Map<string, Set<string>>();
  for (const o of observed) {
    const { replica, node, tenure, address, state, service } = o.value;
    if (address === undefined || !LIVE.has(state)) continue;
    const placed = placements.some((p) => p.value.replica === replica && p.value.node === node && p.value.tenure === tenure);
    const assignedHere = assigned.some((a) => a.value.replica === replica && a.value.node === node && a.value.tenure === tenure);
    const registered = nodes.some((n) => n.value.name === node && n.kv.createRevision === tenure);
    const ready = statuses.some((s) => s.value.node === node && s.value.state === 'ready' && s.value.tenure === tenure);
    if (!placed || !assignedHere || !registered || !ready) continue;
    out.set(service, (out.get(service) ?? new Set()).add(address));
  }
  return out;
}

/** A node's rule set as its agent enforces it: each replica with its allowances and their addresses. */
export interface ResolvedRules {
  node: string;
  replicas: { replica: string; service: string; policy: 'open' | 'allow'; rules: NetworkRule[] }[];
}

/**
 * Every node's rule set resolved the way its agent resolves it (core/model/network.ts:
 * enforcedFor, over the node's rule set, the policies and the address sets in the store,
 * and each replica's placed spec): the real code, not a copy.
 */
export async function ruleSets(store: Store): Promise<ResolvedRules[]> {
  const [sets, policies, addresses, assigned] = await Promise.all([
    listFacts(store, 'network', prefixOf('network')),
    listFacts(store, 'netPolicy', prefixOf('netPolicy')),
    listFacts(store, 'netAddrs', prefixOf('netAddrs')),
    listFacts(store, 'assigned', prefixOf('assigned')),
  ]);
  return sets.map(({ value: rules }) => {
    const bundle: NetworkBundle = { rules, policies: policies.map((p) => p.value), addresses: addresses.map((a) => a.value) };
    const specs = new Map(assigned.filter((a) => a.value.node === rules.node).map((a) => [a.value.replica, a.value.spec]));
    return {
      node: rules.node,
      replicas: rules.replicas.map((r) => {
        const spec = specs.get(r.replica);
        return { ...r, ...(spec ? enforcedFor(bundle, r.replica, spec) : { rules: [] }) };
      }),
    };
  });
}

const same = (a: readonly string[], b: Iterable<string>) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

/** Every rule's addresses are exactly the current addresses of the services it names. */
export async function checkExact(store: Store): Promise<string[]> {
  const current = await currentAddresses(store);
  const out: string[] = [];
  for (const rs of await ruleSets(store)) {
    for (const r of rs.replicas) {
      for (const rule of r.rules) {
        const want = new Set(rule.services.flatMap((s) => [...(current.get(s) ?? [])]));
        if (!same(rule.from, want)) out.push(`node ${rs.node}, ${r.replica} port ${rule.port ?? 'any'}: admits [${rule.from.join(', ')}], current replicas of ${rule.services.join(', ')} are at [${[...want].sort().join(', ')}]`);
      }
    }
  }
  return out;
}

/** Every address ever handed out, with the service it was given to (addresses are never reused in a run). */
function addressBook(w: SimWorld, book: Map<string, string>): Map<string, string> {
  for (const a of w.agents.values()) for (const wl of a.runtime.workloads.values()) if (wl.address) book.set(wl.address, wl.service);
  return book;
}

/** sim-network: db admits only api; api replicas crash and move under faults; the policy changes, nothing restarts. */
export async function simNetwork(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const plan = new Rng(opts.seed ^ 0x6e7);
  const notes: string[] = [];
  const book = new Map<string, string>();
  w.addCheck(NETWORK_INVARIANTS.exact, async (label) => (label === NETWORK_CONTROLLER ? checkExact(w.store) : []));
  w.addCheck(NETWORK_INVARIANTS.noLeak, async () => {
    addressBook(w, book);
    const out: string[] = [];
    for (const rs of await ruleSets(w.store)) {
      for (const r of rs.replicas) {
        for (const rule of r.rules) {
          for (const a of rule.from) {
            const svc = book.get(a);
            if (!svc || !rule.services.includes(svc)) out.push(`node ${rs.node}, ${r.replica} admits ${a}, which belongs to ${svc ?? 'no replica'}, not to ${rule.services.join(', ')}`);
          }
        }
      }
    }
    return out;
  });
  for (const [i, zone] of ['a', 'b', 'c'].entries()) w.addNode({ name: `node${i + 1}`, zone, cpuMillis: 2_000, memoryBytes: 4 * Gi, subnet: `10.88.${i + 1}` });
  const small = { cpuMillis: 100, memoryBytes: 64 * Mi };
  const db = (allow: string[]): ServiceSpecInput => ({ name: 'db', image: 'web:1', replicas: 2, resources: small, stopGraceMs: 2_000, ports: [{ name: 'pg', container: 5432 }], network: { allow: allow.map((service) => ({ service, port: 'pg' })) } });
  await w.runFor(3_000);
  await w.apply(db(['api']));
  await w.apply({ name: 'api', image: 'api:1', replicas: 3, resources: small, stopGraceMs: 2_000 });
  await w.apply({ name: 'other', image: 'worker:1', replicas: 2, resources: small, stopGraceMs: 2_000 });
  await w.runFor(20_000);
  const admitted = async () => {
    const sets = await ruleSets(w.store);
    return sets.flatMap((rs) => rs.replicas.filter((r) => r.service === 'db').map((r) => r.rules[0]?.from ?? []));
  };
  const runningAddresses = (service: string) => [...w.agents.values()].flatMap((a) => a.runtime.alive().filter((x) => x.service === service && x.address).map((x) => x.address!));
  const apiAddresses = runningAddresses('api');
  expectThat(w, apiAddresses.length === 3, 'three api replicas run, each with its own address');
  const dbRules = await admitted();
  expectThat(w, dbRules.length === 2 && dbRules.every((f) => same(f, apiAddresses)), 'both db replicas admit exactly the three api addresses');

  // A crash: the replaced replica's address leaves, its replacement's joins.
  const victim = [...w.agents.values()].flatMap((a) => a.runtime.alive()).find((x) => x.service === 'api')!;
  w.crashReplica(victim.replica, 137);
  await w.runFor(15_000);
  const after = await admitted();
  expectThat(w, after.every((f) => !f.includes(victim.address!) && same(f, runningAddresses('api'))), `the crashed api replica's address ${victim.address} is no longer admitted; its replacement is`);

  // Faults from the seed while the policy holds: a partition, a power cycle, an outage, crashes.
  const nodes = ['node1', 'node2', 'node3'];
  const t0 = w.t;
  for (let i = 0; i < 4; i++) {
    const at = t0 + plan.int(1, 30) * 1_000;
    const node = plan.pick(nodes);
    switch (plan.pick(['partition', 'power', 'outage', 'crash', 'restart'] as const)) {
      case 'partition':
        w.at(at, 'fault', () => w.partition(node, true));
        w.at(at + plan.int(3, 20) * 1_000, 'heal', () => w.partition(node, false));
        break;
      case 'power':
        w.at(at, 'fault', () => w.powerOff(node));
        w.at(at + plan.int(5, 20) * 1_000, 'heal', () => w.powerOn(node));
        break;
      case 'outage':
        w.at(at, 'fault', () => w.setStoreDown(true));
        w.at(at + plan.int(2, 10) * 1_000, 'heal', () => w.setStoreDown(false));
        break;
      case 'restart':
        w.at(at, 'fault', () => w.killAgent(node));
        w.at(at + plan.int(1, 10) * 1_000, 'heal', () => w.restartAgent(node));
        break;
      case 'crash':
        w.at(at, 'fault', () => {
          const r = plan.pick([...w.agents.values()].flatMap((a) => a.runtime.alive()).filter((x) => x.service !== 'db').map((x) => x.replica).concat(['none']));
          if (r !== 'none') w.crashReplica(r, 1);
        });
        break;
    }
  }
  await w.runFor(60_000);

  // The policy changes: other is admitted too; no replica restarts for it.
  const ids = async () => (await listFacts(w.store, 'replica', prefixOf('replica'))).filter((r) => !r.value.retired).map((r) => r.value.id).sort();
  const before = await ids();
  await w.apply(db(['api', 'other']));
  await w.runFor(10_000);
  const both = await admitted();
  expectThat(w, both.length === 2 && both.every((f) => same(f, [...runningAddresses('api'), ...runningAddresses('other')])), 'after the policy change db admits api and other');
  expectThat(w, JSON.stringify(await ids()) === JSON.stringify(before), 'the policy change restarted no replica');

  await w.runFor(20_000);
  await w.checkQuiescent();
  if (w.violations.length === 0) {
    const current = await currentAddresses(w.store);
    for (const [svc, set] of current) {
      if (!same([...set], runningAddresses(svc))) w.violate(NETWORK_INVARIANTS.converged, `${svc}: the store says [${[...set].sort().join(', ')}], the nodes run [${runningAddresses(svc).sort().join(', ')}]`);
    }
    for (const d of await checkExact(w.store)) w.violate(NETWORK_INVARIANTS.converged, d);
  }
  for (const rs of await ruleSets(w.store)) notes.push(`${rs.node}: ${rs.replicas.map((r) => `${r.replica} ${r.policy}${r.rules.map((x) => ` [${x.from.join(' ')}]`).join('')}`).join('; ')}`);
  return result('sim-network', w, notes);
}
