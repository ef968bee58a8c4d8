import { buildKey, decodeFact } from '../core/keys.js';
import { clientsOf, policedServices } from '../core/model/network.js';
import type { NetAddrs, NetPolicy, NetworkRules } from '../core/model/facts.js';
import type { Store } from '../db/store.js';

/** One value of a node's network bundle beyond its rule set, in key order (a page's cursor is a key). */
export type BundleItem = { key: string; policy: NetPolicy } | { key: string; addresses: NetAddrs };

/**
 * What a node's agent needs to police its replicas, read at one revision: the node's rule set
 * (`/network/<node>`), the policies of its policed services (`/netpolicy/<service>`) and the
 * address sets they name (`/netaddrs/<client>`). Each value has its own bound; the answer is
 * paged by bytes (docs/network.md).
 */
export async function readNetworkBundle(store: Store, node: string, revision: number): Promise<{ rules: NetworkRules | null; items: BundleItem[]; keys: Set<string> }> {
  const key = buildKey('network', node);
  const kv = await store.get(key, { revision });
  const rules = kv ? decodeFact('network', key, kv.value) : null;
  const keys = new Set<string>([key]);
  const items: BundleItem[] = [];
  const clients = new Set<string>();
  for (const service of policedServices(rules)) {
    const k = buildKey('netPolicy', service);
    keys.add(k);
    const p = await store.get(k, { revision });
    if (!p) continue;
    const policy = decodeFact('netPolicy', k, p.value);
    items.push({ key: k, policy });
    for (const c of clientsOf(policy.allow)) clients.add(c);
  }
  for (const client of [...clients].sort()) {
    const k = buildKey('netAddrs', client);
    keys.add(k);
    const a = await store.get(k, { revision });
    if (a) items.push({ key: k, addresses: decodeFact('netAddrs', k, a.value) });
  }
  return { rules, items: items.sort((x, y) => (x.key < y.key ? -1 : 1)), keys };
}

/** The prefix all three kinds share (`/network/`, `/netpolicy/`, `/netaddrs/`): one watch covers them. */
export const NETWORK_WATCH_PREFIX = '/net';
