import { LIMITS } from './defaults.js';
import { DNS_LABEL_MAX } from './names.js';
import { NODE_REPLICAS } from './node.js';

/**
 * Bounds of the network controller's values (docs/network.md, docs/limits.md). A node's rule
 * set lists its replicas only; a service's policy its `allow` list; a client service's address
 * set its replicas' addresses. None copies another, so each follows one bounded thing.
 */
export const NETWORK_LIMITS = {
  /**
   * Addresses one set lists: the most replicas a service may want, twice (a rolling update's
   * surge adds at most as many again). Past it the set lists the first ones, sorted, and
   * `total` says how many there were (the decision says so too).
   */
  maxAddresses: 2 * LIMITS.replicas,
  /** The longest address listed: a dotted quad. */
  addressChars: 15,
} as const;

/** A replica id: its service name, `-` and 8 characters. */
const REPLICA_ID = DNS_LABEL_MAX + 9;
/** The record's own fields around its list: a node name, the time, braces and names. */
const ENVELOPE = 253 + 256;

/** `/network/<node>`: NODE_REPLICAS.max entries of a replica id, a service name and a policy. */
export function networkRulesMaxBytes(): number {
  const entry = '{"replica":"","service":"","policy":"allow"},'.length + REPLICA_ID + DNS_LABEL_MAX;
  return ENVELOPE + NODE_REPLICAS.max * entry;
}

/** `/netpolicy/<service>`: LIMITS.listItems allow items of a service name and a port name (15 characters). */
export function netPolicyMaxBytes(): number {
  const item = '{"service":"","port":""},'.length + DNS_LABEL_MAX + 15;
  return ENVELOPE + LIMITS.listItems * item;
}

/** `/netaddrs/<service>`: NETWORK_LIMITS.maxAddresses quoted dotted quads. */
export function netAddrsMaxBytes(): number {
  return ENVELOPE + NETWORK_LIMITS.maxAddresses * (NETWORK_LIMITS.addressChars + 3);
}
