import { isCcaError } from '../../core/diagnostics/error.js';
import { redactStoredValue } from '../../core/keys.js';
import { sha256Hex } from '../../core/sha256.js';
import type { Store } from '../../db/store.js';
import type { Evidence } from './record.js';

/**
 * A cited piece of evidence as `why` found it: `retained` (the store still holds that
 * revision; `value` is what the key held then, redacted, and its hash matches the citation),
 * `compacted` (the revision is gone: only the key, revision, hash and size remain), or
 * `mismatch` (the value read there does not hash to the citation: shown, but not trusted).
 */
export interface CitedValue {
  key: string;
  modRevision: number;
  hash: string;
  bytes: number;
  state: 'retained' | 'compacted' | 'mismatch';
  value?: string;
}

/** Read one cited value at its revision; a compacted revision is an answer, not an error. */
export async function readCited(store: Store, e: Evidence): Promise<CitedValue | undefined> {
  if (e.hash === undefined) return undefined;
  const base = { key: e.key, modRevision: e.modRevision, hash: e.hash, bytes: e.bytes ?? 0 };
  try {
    const r = await store.range({ key: e.key, revision: e.modRevision });
    const kv = r.kvs[0];
    if (!kv || kv.modRevision !== e.modRevision) return { ...base, state: 'mismatch' };
    const value = redactStoredValue(e.key, kv.value);
    return { ...base, state: `sha256:${sha256Hex(value)}` === e.hash ? 'retained' : 'mismatch', value };
  } catch (err) {
    if (isCcaError(err) && err.code === 'CCA-E0101') return { ...base, state: 'compacted' };
    throw err;
  }
}

/** Every distinct cited value among these decisions' evidence, read once each. */
export async function readAllCited(store: Store, evidence: readonly Evidence[]): Promise<CitedValue[]> {
  const seen = new Set<string>();
  const out: CitedValue[] = [];
  for (const e of evidence) {
    const id = `${e.key}@${e.modRevision}`;
    if (e.hash === undefined || seen.has(id)) continue;
    seen.add(id);
    const c = await readCited(store, e);
    if (c) out.push(c);
  }
  return out;
}

/** One line about a cited value, for text renderings (`whyText`, the CLI). */
export function citedText(c: CitedValue | undefined, e: Evidence): string {
  const size = `${e.bytes ?? 0} bytes, ${e.hash}`;
  if (!c) return `(cited: ${size})`;
  if (c.state === 'compacted') return `(cited: ${size}; revision ${e.modRevision} was compacted, its value is no longer kept)`;
  if (c.state === 'mismatch') return `(cited: ${size}; the value read at revision ${e.modRevision} does not match the citation)`;
  return c.value ?? '';
}
