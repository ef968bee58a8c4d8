import { randomInt } from 'node:crypto';

/**
 * Lease ids on a shared etcd. etcd's own ids are random 63-bit numbers (not safe in a JS
 * number) and carry no owner, so EtcdStore chooses the id itself (LeaseGrant takes one):
 *
 *     id = tag × 2³² + r,   tag = 21-bit hash of the key prefix (never 0),  r random 32-bit
 *
 * Every id is below 2⁵³, and a store recognises its own leases by the tag: `leases()`
 * lists only them, and keepAlive / revoke / timeToLive treat another prefix's lease as
 * unknown. Two prefixes whose tags collide (about one pair in two million) would see each
 * other's lease ids in `leases()`; keys still never cross prefixes. A random collision
 * with a live lease makes etcd refuse the grant and the store draws again.
 */
const TAG_SPACE = 2 ** 21 - 1;
const LOW = 2 ** 32;

/** FNV-1a over the prefix's UTF-8 bytes, folded into 1..2²¹−1. */
export function leaseTag(prefix: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(prefix, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h % TAG_SPACE) + 1;
}

export function newLeaseId(tag: number): number {
  return tag * LOW + randomInt(1, LOW);
}

export function ownsLease(tag: number, id: number): boolean {
  return Number.isSafeInteger(id) && id > 0 && Math.floor(id / LOW) === tag;
}

/** An id in this tag's space that newLeaseId never draws. */
export function unusedLeaseId(tag: number): number {
  return tag * LOW;
}
