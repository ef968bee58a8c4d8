/**
 * Identifiers controllers mint. Randomness comes from the step context, so the simulation
 * replays the same ids from the same seed.
 */
import { parseKey } from '../core/keys.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const SUFFIX = 8;

/**
 * A fresh replica id: `<service>-<8 random chars>`. The suffix has a fixed length so the
 * service can be read back from any key that names only the replica (`/observed/<n>/<r>`),
 * which is how a change to such a key wakes the right per-service step.
 */
export function newReplicaId(service: string, random: () => number): string {
  let s = '';
  for (let i = 0; i < SUFFIX; i++) s += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return `${service}-${s}`;
}

export function serviceOfReplica(replica: string): string | undefined {
  if (replica.length < SUFFIX + 2 || replica[replica.length - SUFFIX - 1] !== '-') return undefined;
  return replica.slice(0, -SUFFIX - 1);
}

/**
 * The service a changed key concerns, for per-service controllers' `subjectOf`: the key's
 * service segment, or the service of the replica it names; undefined for any other key (a
 * node's change concerns every service, so every subject runs).
 */
export function serviceOfKey(key: string): string | undefined {
  const p = parseKey(key);
  if (p?.params.service !== undefined) return p.params.service;
  return p?.params.replica !== undefined ? serviceOfReplica(p.params.replica) : undefined;
}

/** Milliseconds padded so that decision ids sort by time. */
export function timeTag(at: number): string {
  return String(Math.max(0, Math.floor(at))).padStart(13, '0');
}
