import { IPV4_PATTERN as IPV4, type Enforced } from '../core/model/index.js';

export { fallbackPolicy, type Enforced } from '../core/model/index.js';

/** The table the agent owns inside each replica's network namespace (nothing else uses it). */
export const NFT_TABLE = 'cca';

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
