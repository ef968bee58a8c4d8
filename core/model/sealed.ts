/**
 * The stored form of a secret value: `cca:sealed:v1:<key id>:<value id>:<iv>:<ciphertext>:<tag>`
 * (AES-256-GCM, base64url parts; handlers/secret-box.ts seals and opens). Only this parsing
 * lives in core, so controllers and the browser can tell a sealed value from a plain one
 * without any key.
 *
 * The value id is chosen when a plaintext is first sealed and kept when the value is
 * re-sealed under another key (rotation): a replica's template names a secret by it, so a
 * key rotation rolls nothing while a changed value rolls the service.
 */
export const SEALED_PREFIX = 'cca:sealed:v1:';

export interface SealedParts {
  keyId: string;
  valueId: string;
  iv: string;
  ciphertext: string;
  tag: string;
}

const PART = /^[\w-]+$/;

export function parseSealed(value: string): SealedParts | undefined {
  if (!value.startsWith(SEALED_PREFIX)) return undefined;
  const parts = value.slice(SEALED_PREFIX.length).split(':');
  if (parts.length !== 5 || !parts.every((p) => PART.test(p))) return undefined;
  const [keyId, valueId, iv, ciphertext, tag] = parts as [string, string, string, string, string];
  return { keyId, valueId, iv, ciphertext, tag };
}

export function formatSealed(p: SealedParts): string {
  return `${SEALED_PREFIX}${p.keyId}:${p.valueId}:${p.iv}:${p.ciphertext}:${p.tag}`;
}

/** What a template hashes for a secret value: a sealed value's id, a plain value itself. */
export function secretIdentity(value: string): string {
  const s = parseSealed(value);
  return s ? `sealed:${s.valueId}` : value;
}

/** The longest sealed form of a plaintext of `plainBytes` bytes (base64url of iv, data and tag, ids up to 64). */
export function sealedLengthFor(plainBytes: number): number {
  const b64 = (n: number) => Math.ceil((n * 4) / 3);
  return SEALED_PREFIX.length + 64 + 1 + 64 + 1 + b64(12) + 1 + b64(plainBytes) + 1 + b64(16);
}
