import { decodeFact, parseKey, redactFact, type KeyKind } from '../core/keys.js';

/**
 * A stored value as it may leave the server: facts that carry secrets (desired specs,
 * assignments) come back with the secret values replaced; anything else unchanged.
 */
export function redactValue(key: string, value: string): string {
  const parsed = parseKey(key);
  if (!parsed || (parsed.kind !== 'service' && parsed.kind !== 'assigned')) return value;
  try {
    return JSON.stringify(redactFact(parsed.kind as KeyKind, decodeFact(parsed.kind, key, value) as never));
  } catch {
    // A value that does not decode cannot be shown safely.
    return '(unreadable)';
  }
}

/** Walk a JSON answer (why chains, evidence) and redact every {key, value} / {fact, current} pair. */
export function redactDeep<T>(x: T): T {
  if (Array.isArray(x)) return x.map(redactDeep) as T;
  if (x && typeof x === 'object') {
    const o = x as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) out[k] = redactDeep(v);
    if (typeof o.key === 'string' && typeof o.value === 'string') out.value = redactValue(o.key, o.value);
    if (typeof o.fact === 'string' && typeof o.current === 'string') out.current = redactValue(o.fact, o.current);
    return out as T;
  }
  return x;
}
