import { expect, test } from 'vitest';
import { encodeFact } from '../../core/keys.js';
import { LIMITS } from '../../core/model/defaults.js';
import { DNS_LABEL_MAX } from '../../core/model/names.js';
import { NETWORK_LIMITS, netAddrsMaxBytes, netPolicyMaxBytes, networkRulesMaxBytes } from '../../core/model/network-limits.js';
import { NODE_REPLICAS } from '../../core/model/node.js';
import { limits, utf8Length } from '../../db/keyspace.js';
import { defaultLimits } from '../../handlers/deps.js';
import { planAddresses, planNode, policiesInForce, type ClientAddress, type NetworkView } from '../../jobs/controllers/network.js';
import type { Fact } from '../../jobs/facts.js';

/** A name of exactly `n` characters, distinct per `i`. */
const name = (prefix: string, i: number, n = DNS_LABEL_MAX) => `${prefix}${String(i).padStart(6, '0')}`.padEnd(n, 'x');
/** A dotted quad of 15 characters (the longest), distinct per `i`. */
const quad = (i: number) => [100 + (Math.floor(i / 10_000) % 100), 100 + (Math.floor(i / 100) % 100), 100 + (i % 100), 199].join('.');
const kv = (key: string) => ({ key, kv: { key, value: '', createRevision: 1, modRevision: 1, version: 1 } });

/**
 * Issue 20: the network controller's values have bounds that hold for any valid spec and
 * cluster. The largest shape: a node at NODE_REPLICAS.max, each replica of its own service
 * (the longest names) whose policy names LIMITS.listItems client services on named ports,
 * each client with more admissible replicas than an address set lists. Built as a view (no
 * store, no 10,000 processes) and run through the controller's own planning functions.
 */
test('the largest cluster shape yields a rule set, policies and address sets within their stated bounds', () => {
  const clients = Array.from({ length: LIMITS.listItems }, (_, i) => name('c', i));
  const allow = clients.map((service, i) => ({ service, port: name('p', i, 15) }));
  const ports = allow.slice(0, 64).map((a, i) => ({ name: a.port, container: 1000 + i, protocol: 'udp' as const }));
  const assignments: Fact<'assigned'>[] = [];
  const services = new Map<string, Fact<'service'>>();
  for (let i = 0; i < NODE_REPLICAS.max; i++) {
    const service = name('s', i);
    const spec = { name: service, ports, network: { allow } };
    services.set(service, { ...kv(`/services/${service}`), value: spec } as unknown as Fact<'service'>);
    assignments.push({ ...kv(`/assigned/n1/${service}-abcdefgh`), value: { replica: `${service}-abcdefgh`, service, node: 'n1', tenure: 1, spec } } as unknown as Fact<'assigned'>);
  }
  const view = { services, assignments, byNode: new Map([['n1', assignments]]) } as unknown as NetworkView;
  const inForce = policiesInForce(view);
  expect(inForce.size).toBe(NODE_REPLICAS.max);

  // The node's rule set: one short entry per replica, no addresses, no allowances.
  const plan = planNode(view, 'n1', inForce);
  const rules = encodeFact('network', { node: 'n'.repeat(253), replicas: plan.rules, at: Number.MAX_SAFE_INTEGER });
  expect(plan.rules.every((r) => r.policy === 'allow')).toBe(true);
  expect(utf8Length(rules)).toBeLessThanOrEqual(networkRulesMaxBytes());
  expect(utf8Length(rules)).toBeGreaterThan(0.9 * networkRulesMaxBytes());

  // A policy: the service's allow list, whatever the node.
  const policy = encodeFact('netPolicy', { service: name('s', 0), allow: inForce.get(name('s', 0))!.allow, source: 'placed', at: Number.MAX_SAFE_INTEGER });
  expect(utf8Length(policy)).toBeLessThanOrEqual(netPolicyMaxBytes());
  expect(utf8Length(policy)).toBeGreaterThan(0.9 * netPolicyMaxBytes());

  // An address set: more admissible replicas than it lists (a rollout's surge and then some).
  const many: ClientAddress[] = Array.from({ length: NETWORK_LIMITS.maxAddresses + 500 }, (_, i) => ({ replica: `${clients[0]}-${String(i).padStart(8, '0')}`, service: clients[0]!, address: quad(i), facts: [], node: { key: '/nodes/n1', tenure: 1 } }));
  expect(new Set(many.map((c) => c.address)).size).toBe(many.length);
  expect(many.every((c) => c.address.length === NETWORK_LIMITS.addressChars)).toBe(true);
  const set = planAddresses(many);
  expect(set.addresses).toHaveLength(NETWORK_LIMITS.maxAddresses);
  expect(set.total).toBe(many.length);
  const addrs = encodeFact('netAddrs', { service: clients[0]!, addresses: set.addresses, total: set.total, at: Number.MAX_SAFE_INTEGER });
  expect(utf8Length(addrs)).toBeLessThanOrEqual(netAddrsMaxBytes());
  expect(utf8Length(addrs)).toBeGreaterThan(0.9 * netAddrsMaxBytes());

  // Every bound is under the store's value limit, and one value fits one page of the agent's answer.
  for (const bound of [networkRulesMaxBytes(), netPolicyMaxBytes(), netAddrsMaxBytes()]) {
    expect(bound).toBeLessThan(limits.maxValueBytes);
    expect(bound).toBeLessThan(defaultLimits.assignmentsPageBytes);
  }
});
