/**
 * Secret values at rest: sealed with AES-256-GCM (node:crypto) before a spec is written,
 * opened only for the agent of the node that runs the replica. A DBA reading `cca_kv` or
 * `cca_log` (or an etcd dump, or a SQLite file) sees `cca:sealed:v1:…`, never the value.
 *
 * Keys come from the operator (CCA_SECRET_KEY or a key file): one per line or comma,
 * `ID:BASE64` (32 bytes), the first is the one new values are sealed with, the others
 * still open what they sealed (rotation: put the new key first, run `cca secrets rotate`,
 * drop the old key once nothing uses it). The key id and the value id are bound to the
 * ciphertext as additional data, so a value cannot be moved under another id unnoticed.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CcaError, messageOf } from '../core/diagnostics/index.js';
import { formatSealed, LIMITS, parseSealed, type ServiceSpec } from '../core/model/index.js';

export interface SecretKey {
  id: string;
  key: Buffer;
}

const KEY_ID = /^[\w-]{1,64}$/;

/** Parse `ID:BASE64` entries (newline- or comma-separated; `#` comments); a bare BASE64 is id `k1`. */
export function parseKeyring(text: string, source: string): SecretKey[] {
  const entries = text
    .split(/[\n,]/)
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter(Boolean);
  const keys = entries.map((entry) => {
    const colon = entry.indexOf(':');
    const id = colon >= 0 ? entry.slice(0, colon) : 'k1';
    const key = Buffer.from(colon >= 0 ? entry.slice(colon + 1) : entry, 'base64');
    if (!KEY_ID.test(id)) throw new CcaError('CCA-E0660', { source, reason: `key id "${id}" must be 1–64 letters, digits, _ or -` });
    if (key.length !== 32) throw new CcaError('CCA-E0660', { source, reason: `key ${id} is ${key.length} bytes; AES-256 needs 32 (make one with: openssl rand -base64 32)` });
    return { id, key };
  });
  if (keys.length === 0) throw new CcaError('CCA-E0660', { source, reason: 'no key in it' });
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new CcaError('CCA-E0660', { source, reason: 'a key id appears twice' });
  return keys;
}

/** The keyring from the environment (CCA_SECRET_KEY) or a file (CCA_SECRET_KEY_FILE / --secret-key-file), if any. */
export function loadKeyring(opts: { key?: string | undefined; file?: string | undefined }): SecretKey[] | undefined {
  if (opts.key) return parseKeyring(opts.key, 'CCA_SECRET_KEY');
  if (!opts.file) return undefined;
  let text: string;
  try {
    text = readFileSync(opts.file, 'utf8');
  } catch (e) {
    throw new CcaError('CCA-E0660', { source: opts.file, reason: messageOf(e) });
  }
  return parseKeyring(text, opts.file);
}

export function newSecretKey(id = 'k1'): string {
  return `${id}:${randomBytes(32).toString('base64')}`;
}

const b64 = (b: Buffer) => b.toString('base64url');

export class SecretBox {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: readonly SecretKey[]) {
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  /** Seal a plaintext under the current key; `valueId` is kept when re-sealing (rotation). */
  seal(plain: string, valueId = randomBytes(9).toString('base64url')): string {
    if (Buffer.byteLength(plain) > LIMITS.configBytes) throw new CcaError('CCA-E0661', { reason: `a secret value is over ${LIMITS.configBytes} bytes` });
    const keyId = this.currentKeyId;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.byId.get(keyId)!, iv);
    cipher.setAAD(Buffer.from(`${keyId}:${valueId}`));
    const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return formatSealed({ keyId, valueId, iv: b64(iv), ciphertext: b64(ciphertext), tag: b64(cipher.getAuthTag()) });
  }

  /** The plaintext of a sealed value (a plain value, written before sealing existed, is returned as is). */
  open(value: string): string {
    const s = parseSealed(value);
    if (!s) return value;
    const key = this.byId.get(s.keyId);
    if (!key) throw new CcaError('CCA-E0661', { reason: `a value is sealed with key ${s.keyId}, which this server does not have (it has ${[...this.byId.keys()].join(', ')})` });
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(s.iv, 'base64url'));
      decipher.setAAD(Buffer.from(`${s.keyId}:${s.valueId}`));
      decipher.setAuthTag(Buffer.from(s.tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(s.ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new CcaError('CCA-E0661', { reason: `a value sealed with key ${s.keyId} does not open: the key is not the one it was sealed with, or the stored value was altered` });
    }
  }

  /** The same value under the current key, keeping its id (so no template changes). */
  reseal(value: string): string {
    const s = parseSealed(value);
    if (s && s.keyId === this.currentKeyId) return value;
    return this.seal(this.open(value), s?.valueId);
  }
}

/** A spec with every secret value opened (for diffs on the server, and the agent's assignments). */
export function openSpec(box: SecretBox | undefined, spec: ServiceSpec): ServiceSpec {
  if (spec.secrets.length === 0 || !spec.secrets.some((s) => parseSealed(s.value))) return spec;
  if (!box) throw new CcaError('CCA-E0661', { reason: 'a stored secret is sealed but this server has no secret key (set CCA_SECRET_KEY or --secret-key-file)' });
  return { ...spec, secrets: spec.secrets.map((s) => ({ ...s, value: box.open(s.value) })) };
}

/**
 * A spec about to be written, its secrets sealed: a value equal to what is stored keeps its
 * stored sealed form (same value id, so re-applying the same file rolls nothing).
 */
export function sealSpec(box: SecretBox | undefined, spec: ServiceSpec, stored: ServiceSpec | undefined): ServiceSpec {
  if (spec.secrets.length === 0) return spec;
  if (!box) throw new CcaError('CCA-E0662', { service: spec.name });
  const before = new Map((stored?.secrets ?? []).map((s) => [s.name, s.value]));
  return {
    ...spec,
    secrets: spec.secrets.map((s) => {
      const old = before.get(s.name);
      if (old !== undefined && parseSealed(old) && box.open(old) === s.value) return { ...s, value: old };
      return { ...s, value: box.seal(s.value) };
    }),
  };
}
