import { z } from 'zod';
import { makeDiagnostic } from '../diagnostics/error.js';
import { netAddrsSchema, netPolicySchema, networkRulesSchema, type NetAddrs, type NetPolicy, type NetworkRule, type NetworkRules } from './facts.js';
import type { AllowRule, Port, ServiceSpec } from './service.js';

/** What a replica's namespace should enforce: open, or only these allowances (the rest dropped). */
export interface Enforced {
  policy: 'open' | 'allow';
  rules: NetworkRule[];
}

/**
 * What the agent needs to police its node: the node's rule set, the policies of its policed
 * services and the address sets those policies name, all read at one revision. The agent API
 * answers it in pages (`/v1/agent/nodes/<node>/network`); the agent keeps the last one on disk.
 */
export const networkBundleSchema = z.object({
  rules: networkRulesSchema.nullable(),
  policies: z.array(netPolicySchema),
  addresses: z.array(netAddrsSchema),
});
export type NetworkBundle = z.output<typeof networkBundleSchema>;

/** The client services a policy names (whose address sets it needs). */
export function clientsOf(allow: readonly AllowRule[]): string[] {
  return [...new Set(allow.map((a) => a.service))].sort();
}

/**
 * A policy's allow list resolved against the ports a replica was placed with (what it listens
 * on): one rule per port and protocol, admitting the addresses of the services named. A named
 * port the replica does not declare admits nothing and is reported (CCA-E0423). The controller
 * uses this for its decisions, the agent for what it enforces: one copy of the policy.
 */
export function allowancesFor(
  service: string,
  replica: string,
  allow: readonly AllowRule[],
  ports: readonly Port[],
  addresses: (client: string) => readonly string[],
): { rules: NetworkRule[]; notes: string[] } {
  const notes: string[] = [];
  const byPort = new Map<string, { port?: number; protocol?: 'tcp' | 'udp'; from: Set<string>; services: Set<string> }>();
  for (const item of allow) {
    let port: number | undefined;
    let protocol: 'tcp' | 'udp' | undefined;
    if (typeof item.port === 'string') {
      const declared = ports.find((p) => p.name === item.port);
      if (!declared) {
        const d = makeDiagnostic('CCA-E0423', { service, port: item.port, replica });
        notes.push(`${d.code} ${d.message}`);
        continue;
      }
      port = declared.container;
      protocol = declared.protocol;
    } else if (typeof item.port === 'number') {
      port = item.port;
      protocol = ports.find((p) => p.container === item.port)?.protocol ?? 'tcp';
    }
    const key = `${port ?? '*'}/${protocol ?? '*'}`;
    const entry = byPort.get(key) ?? { ...(port === undefined ? {} : { port }), ...(protocol === undefined ? {} : { protocol }), from: new Set<string>(), services: new Set<string>() };
    entry.services.add(item.service);
    for (const a of addresses(item.service)) entry.from.add(a);
    byPort.set(key, entry);
  }
  const rules = [...byPort.values()]
    .map(({ from, services, ...rest }) => ({ ...rest, services: [...services].sort(), from: [...from].sort() }))
    .sort((x, y) => (x.port ?? 0) - (y.port ?? 0) || (x.protocol ?? '').localeCompare(y.protocol ?? ''));
  return { rules, notes };
}

/**
 * The policy of a replica the controller has not listed yet (just started, or the store is
 * away): a service whose spec has a policy denies everything until its allowances arrive,
 * so a new replica is never briefly open; one without a policy is open.
 */
export function fallbackPolicy(spec: Pick<ServiceSpec, 'network'>): Enforced {
  return spec.network.allow.length > 0 ? { policy: 'allow', rules: [] } : { policy: 'open', rules: [] };
}

/**
 * What one replica's namespace enforces: its entry in the node's rule set, its service's
 * policy in force (else the one it was placed with) resolved against its placed ports, with
 * the addresses of the sets named; a replica not listed yet gets the fallback.
 */
export function enforcedFor(bundle: NetworkBundle | undefined, replica: string, spec: Pick<ServiceSpec, 'network' | 'ports'>): Enforced {
  const entry = bundle?.rules?.replicas.find((r) => r.replica === replica);
  if (!bundle || !entry) return fallbackPolicy(spec);
  if (entry.policy === 'open') return { policy: 'open', rules: [] };
  const policy: NetPolicy | undefined = bundle.policies.find((p) => p.service === entry.service);
  const sets = new Map<string, NetAddrs>(bundle.addresses.map((a) => [a.service, a]));
  const { rules } = allowancesFor(entry.service, replica, policy?.allow ?? spec.network.allow, spec.ports, (c) => sets.get(c)?.addresses ?? []);
  return { policy: 'allow', rules };
}

/** The keys a node's bundle is made of, beyond its rule set: the policies of its policed services. */
export function policedServices(rules: NetworkRules | null | undefined): string[] {
  return [...new Set((rules?.replicas ?? []).filter((r) => r.policy === 'allow').map((r) => r.service))].sort();
}
