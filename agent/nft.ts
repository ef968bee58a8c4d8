import type { ReplicaPolicy, ServiceSpec } from '../core/model/index.js';

/** The table the agent owns inside each replica's network namespace (nothing else uses it). */
export const NFT_TABLE = 'cca';

/** What a replica's namespace should enforce: open, or only these allowances (the rest dropped). */
export type Enforced = Pick<ReplicaPolicy, 'policy' | 'rules'>;

/**
 * The policy of a replica the controller has not listed yet (just started, or the store is
 * away): a service whose spec has a policy denies everything until its allowances arrive,
 * so a new replica is never briefly open; one without a policy is open.
 */
export function fallbackPolicy(spec: Pick<ServiceSpec, 'network'>): Enforced {
  return spec.network.allow.length > 0 ? { policy: 'allow', rules: [] } : { policy: 'open', rules: [] };
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/**
 * The whole nft script for one replica's namespace: recreate the agent's table in one
 * transaction (`nft -f` applies a file atomically: the old rules hold until the new ones
 * replace them, and no packet sees neither). Input only: what may connect *to* the replica.
 * Always admitted: loopback, replies to the replica's own connections, and the node itself
 * (`gateway`: the agent's health probes and host-network processes). Only IPv4 allowances
 * exist; anything else is dropped under a policy. A value that is not an IPv4 address is
 * left out, never spliced into the script.
 */
export function renderPolicy(enforced: Enforced, gateway: string): string {
  const lines = [`table inet ${NFT_TABLE}`, `delete table inet ${NFT_TABLE}`, `table inet ${NFT_TABLE} {`, '  chain input {'];
  if (enforced.policy === 'open') {
    lines.push('    type filter hook input priority 0; policy accept;');
  } else {
    lines.push('    type filter hook input priority 0; policy drop;', '    ct state established,related accept', '    iif "lo" accept');
    if (IPV4.test(gateway)) lines.push(`    ip saddr ${gateway} accept`);
    for (const r of enforced.rules) {
      const from = r.from.filter((a) => IPV4.test(a));
      if (from.length === 0) continue;
      const port = r.port === undefined ? '' : `${r.protocol ?? 'tcp'} dport ${r.port} `;
      lines.push(`    ${port}ip saddr { ${from.join(', ')} } accept`);
    }
  }
  lines.push('  }', '}', '');
  return lines.join('\n');
}
