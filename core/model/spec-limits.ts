import { sealedLengthFor } from './sealed.js';

/**
 * Size limits of what a user applies (docs/limits.md): per service and per apply, on top of
 * the per-field limits in defaults.ts (LIMITS). They make every record that carries a spec
 * fit the store's value limit (1.5 MiB) with room to spare, for any valid spec: the
 * assignment holds the stored spec (secrets sealed: a third longer), and nothing else does.
 */
export const SPEC_LIMITS = {
  /** One service's spec as JSON (UTF-8 bytes, secrets as written), checked when it is applied. */
  serviceBytes: 256 * 1024,
  /** Services one apply writes or deletes (one store txn, at most 128 operations). */
  applyServices: 100,
  /** The stored specs one apply writes, together (one store txn: under etcd's 1.5 MiB request limit). */
  applyStoredBytes: 1024 * 1024,
  /** Secrets per service (service-shape.ts): each sealed secret grows by a fixed overhead. */
  secrets: 64,
} as const;

const encoder = new TextEncoder();

/** A spec's size as the limits count it: its JSON in UTF-8 bytes. */
export function specBytes(spec: unknown): number {
  return encoder.encode(JSON.stringify(spec)).length;
}

/**
 * The most bytes a stored spec can take: sealing a secret of n bytes writes
 * sealedLengthFor(n) characters in place of at least n, i.e. a third more plus a fixed
 * overhead, for at most `SPEC_LIMITS.secrets` secrets.
 */
export function storedSpecMaxBytes(): number {
  const perSecret = sealedLengthFor(0) + 2;
  return Math.ceil((SPEC_LIMITS.serviceBytes * 4) / 3) + SPEC_LIMITS.secrets * perSecret;
}

/**
 * The most bytes an assignment (`/assigned/`) can take: the stored spec plus its own fields
 * (replica id, service and node names of at most 253 characters each, a few numbers).
 */
export function assignmentMaxBytes(): number {
  return storedSpecMaxBytes() + 2_048;
}
