import type { KeyValue } from '../store.js';
import type { Snapshot } from './sql/loadSnapshot.js';
import { keyValueOf, type LogRow } from './sql/writeChanges.js';

/**
 * What the write batcher knows for certain about some keys: their rows (or absence) at one
 * head, learnt from a snapshot read or from its own guarded commits since. Only ever a
 * shortcut for planning: a plan made from it commits with the same head guard as one made
 * from a fresh read (writeChangesAtHead), so if anyone else wrote since, the commit writes
 * nothing and the batcher forgets everything. A plan from it that would write nothing is
 * never an answer (batch-apply.ts reads the store for those). Bounded by keys and bytes;
 * the oldest learnt go first.
 */
export class KnownRows {
  private head = -1;
  private compact = 0;
  private rows = new Map<string, KeyValue | null>();
  private bytes = 0;

  constructor(
    private readonly maxKeys = 4096,
    private readonly maxBytes = 8 * 1024 * 1024,
  ) {}

  /** The known state of these keys as a snapshot, or undefined unless every one is known. */
  snapshotOf(keys: readonly string[]): Snapshot | undefined {
    if (this.head < 0 || keys.length === 0) return undefined;
    const rows: KeyValue[] = [];
    for (const k of keys) {
      const kv = this.rows.get(k);
      if (kv === undefined) return undefined;
      if (kv) rows.push(kv);
    }
    return { revision: this.head, compactRevision: this.compact, rows };
  }

  /** A snapshot read at `snap.revision` of these keys (absent ones included). */
  learn(snap: Snapshot, keys: readonly string[]): void {
    if (snap.revision !== this.head || snap.compactRevision !== this.compact) this.reset(snap.revision, snap.compactRevision);
    const found = new Map(snap.rows.map((kv) => [kv.key, kv] as const));
    for (const k of keys) this.set(k, found.get(k) ?? null);
    this.trim();
  }

  /** A guarded commit from `from` to `to` succeeded with these log rows: nobody wrote between. */
  committed(from: number, to: number, rows: readonly LogRow[]): void {
    if (from !== this.head) {
      this.reset(to, this.compact);
    } else {
      this.head = to;
    }
    for (const r of rows) {
      this.set(r.key, r.deleted ? null : keyValueOf(r));
    }
    this.trim();
  }

  forget(): void {
    this.reset(-1, 0);
  }

  private reset(head: number, compact: number): void {
    this.head = head;
    this.compact = compact;
    this.rows.clear();
    this.bytes = 0;
  }

  private set(key: string, kv: KeyValue | null): void {
    const old = this.rows.get(key);
    if (old !== undefined) {
      this.bytes -= size(key, old);
      this.rows.delete(key);
    }
    this.rows.set(key, kv);
    this.bytes += size(key, kv);
  }

  /**
   * The oldest learnt go until the bounds hold, once per read or commit learnt: a Map walks
   * past its deleted entries from the start, so a walk per key set cost a batch of a
   * thousand keys a million steps.
   */
  private trim(): void {
    if (this.rows.size <= this.maxKeys && this.bytes <= this.maxBytes) return;
    for (const [k, v] of this.rows) {
      if (this.rows.size <= this.maxKeys && this.bytes <= this.maxBytes) break;
      this.rows.delete(k);
      this.bytes -= size(k, v);
    }
  }
}

const size = (key: string, kv: KeyValue | null) => 2 * key.length + (kv ? 2 * kv.value.length + 48 : 8);
