import { decodeFact, type FactOf, type KeyKind } from '../core/keys.js';
import type { KeyValue } from '../db/store.js';

/**
 * Bytes of stored values the pod's memo holds at most (values and keys, as UTF-16 lengths):
 * a 10,000-replica cluster's records, placements, assignments and observations fit.
 */
export const DECODE_MEMO_MAX_BYTES = 24 * 2 ** 20;

/**
 * Append-only histories, read whole only by retention and `why`: remembering them would push
 * out the state every step reads (and hold the pod's heap at the bound).
 */
const UNREMEMBERED: ReadonlySet<KeyKind> = new Set<KeyKind>(['decision', 'repeat', 'event']);

/**
 * `decodeFact`, remembered per key while the value stays the same. Controllers read whole
 * prefixes every step (every assignment carries its spec), and validating them again each
 * time was a fifth of a pod's CPU during a 1,000-replica roll (docs/benchmarks.md). The
 * answer is exactly decodeFact's (the value string is compared, not a revision), frozen so
 * that no reader can change what another reads; least recently used first out past the byte bound.
 */
export class DecodeMemo {
  private readonly memo = new Map<string, { value: string; decoded: unknown }>();
  /**
   * By the key-value object itself, when it is frozen: the pod's read mirror hands out its own
   * frozen copy while a key is unchanged, answered here without comparing the value or
   * reordering the memo. Weak: the entry goes with the object.
   */
  private readonly byKv = new WeakMap<KeyValue, unknown>();
  private held = 0;

  constructor(private readonly maxBytes = DECODE_MEMO_MAX_BYTES) {}

  /** `decode` of a key-value as a store returned it. */
  decodeKv<K extends KeyKind>(kind: K, kv: KeyValue): FactOf<K> {
    const known = this.byKv.get(kv);
    if (known !== undefined) return known as FactOf<K>;
    const decoded = this.decode(kind, kv.key, kv.value);
    // Histories are not remembered (see UNREMEMBERED), nor is a value whose object a caller may change.
    if (!UNREMEMBERED.has(kind) && Object.isFrozen(kv)) this.byKv.set(kv, decoded);
    return decoded;
  }

  decode<K extends KeyKind>(kind: K, key: string, value: string): FactOf<K> {
    if (UNREMEMBERED.has(kind)) return decodeFact(kind, key, value);
    const hit = this.memo.get(key);
    if (hit !== undefined && hit.value === value) {
      // Least recently used first out: a key deleted from the store is never read again and
      // drifts to the front, while a stable one read every step stays.
      this.memo.delete(key);
      this.memo.set(key, hit);
      return hit.decoded as FactOf<K>;
    }
    const decoded = deepFreeze(decodeFact(kind, key, value));
    if (hit !== undefined) this.forget(key, hit.value);
    this.memo.set(key, { value, decoded });
    this.held += key.length + value.length;
    for (const [k, e] of this.memo) {
      if (this.held <= this.maxBytes) break;
      this.forget(k, e.value);
    }
    return decoded;
  }

  /** How many values and bytes it holds. */
  size(): { entries: number; bytes: number } {
    return { entries: this.memo.size, bytes: this.held };
  }

  private forget(key: string, value: string): void {
    this.memo.delete(key);
    this.held -= key.length + value.length;
  }
}

/** The one memo of this process: every read through jobs/facts.ts uses it. */
export const decodeMemo = new DecodeMemo();

function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  for (const x of Object.values(v)) deepFreeze(x);
  return Object.freeze(v);
}
