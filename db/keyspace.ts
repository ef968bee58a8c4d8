import { CcaError } from '../core/diagnostics/index.js';
import { MAX_LEASES_PER_READ, type Compare, type KeyValue, type RangeRequest, type WatchRequest } from './store.js';

/** Limits shared by every backend, so the conformance suite holds everywhere. */
export const limits = {
  /** Postgres btree entries must stay under ~2.7 kB; etcd has no smaller bound. */
  maxKeyBytes: 2048,
  /** etcd's default --max-request-bytes. */
  maxValueBytes: 1_572_864,
  /** etcd's default --max-txn-ops. */
  maxTxnOps: 128,
  maxLeaseTtl: 9_000_000_000,
  /** Leases one leasesTimeToLive call reads: one statement on Postgres, bounded like a txn's keys. */
  maxLeasesPerRead: MAX_LEASES_PER_READ,
} as const;

/** A leasesTimeToLive call's ids, checked the same on every backend (CCA-E0128). */
export function checkLeaseIds(ids: readonly number[]): void {
  if (ids.length > limits.maxLeasesPerRead) throw new CcaError('CCA-E0128', { count: ids.length, max: limits.maxLeasesPerRead });
}

/**
 * Order keys as etcd does: by their UTF-8 bytes. UTF-8 byte order equals code point
 * order, and UTF-16 code unit order differs from it only between surrogates and
 * U+E000..U+FFFF, so the fast path is plain comparison.
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs === ys) return x < y ? -1 : 1;
    // A surrogate starts a code point above U+FFFF, which sorts after any BMP unit.
    return xs ? 1 : -1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** The smallest key greater than every key with this prefix; undefined = no bound. */
export function prefixEnd(prefix: string): string | undefined {
  const cps = Array.from(prefix);
  while (cps.length > 0) {
    const last = cps.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      // Lone surrogates cannot be stored as UTF-8; skip their block.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return cps.join('') + String.fromCodePoint(next);
    }
  }
  return undefined;
}

const encoder = new TextEncoder();
export function utf8Length(s: string): number {
  // Fast path: ASCII strings are the norm for keys.
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  return ascii ? s.length : encoder.encode(s).length;
}

export function checkKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new CcaError('CCA-E0103', { key: JSON.stringify(key ?? ''), reason: 'it is empty', maxBytes: limits.maxKeyBytes });
  }
  checkText(key, 'CCA-E0103', key);
  const bytes = utf8Length(key);
  if (bytes > limits.maxKeyBytes) {
    throw new CcaError('CCA-E0103', {
      key: JSON.stringify(key.slice(0, 40) + '…'),
      reason: `it is ${bytes} bytes long`,
      maxBytes: limits.maxKeyBytes,
    });
  }
}

function checkText(s: string, code: 'CCA-E0103' | 'CCA-E0105', key: string): void {
  if (s.includes('\u0000')) {
    throw new CcaError(code, { key: JSON.stringify(key), reason: 'it contains a NUL character', maxBytes: limits.maxKeyBytes });
  }
  if (!s.isWellFormed()) {
    throw new CcaError(code, { key: JSON.stringify(key), reason: 'it contains a lone UTF-16 surrogate', maxBytes: limits.maxKeyBytes });
  }
}

export function checkValue(key: string, value: string): void {
  if (typeof value !== 'string') {
    throw new CcaError('CCA-E0105', { key: JSON.stringify(key), reason: `it is a ${typeof value}, not a string` });
  }
  checkText(value, 'CCA-E0105', key);
  const bytes = utf8Length(value);
  if (bytes > limits.maxValueBytes) {
    throw new CcaError('CCA-E0104', { key: JSON.stringify(key), bytes, maxBytes: limits.maxValueBytes });
  }
}

/** A resolved key interval: [start, end), end undefined = unbounded; `single` = exactly one key. */
export interface KeyInterval {
  start: string;
  end: string | undefined;
  single: boolean;
}

export function intervalOf(req: { key?: string; prefix?: string; start?: string; end?: string }): KeyInterval {
  const given = [req.key !== undefined, req.prefix !== undefined, req.start !== undefined].filter(Boolean).length;
  if (given !== 1) {
    throw new CcaError('CCA-E0106', { reason: `expected exactly one of key, prefix or start, got ${given}` });
  }
  if (req.end !== undefined && req.start === undefined) {
    throw new CcaError('CCA-E0106', { reason: 'end is only allowed together with start' });
  }
  if (req.key !== undefined) {
    checkKey(req.key);
    return { start: req.key, end: undefined, single: true };
  }
  if (req.prefix !== undefined) {
    if (req.prefix !== '') checkKey(req.prefix);
    return { start: req.prefix, end: prefixEnd(req.prefix), single: false };
  }
  const start = req.start!;
  if (start !== '') checkKey(start);
  if (req.end !== undefined) {
    checkKey(req.end);
    if (compareKeys(req.end, start) < 0) {
      throw new CcaError('CCA-E0106', { reason: `end ${JSON.stringify(req.end)} sorts before start ${JSON.stringify(start)}` });
    }
  }
  return { start, end: req.end, single: false };
}

export function inInterval(key: string, iv: KeyInterval): boolean {
  if (iv.single) return key === iv.start;
  return compareKeys(key, iv.start) >= 0 && (iv.end === undefined || compareKeys(key, iv.end) < 0);
}

export function checkRangeOptions(req: RangeRequest): void {
  for (const [name, v] of [['revision', req.revision], ['limit', req.limit]] as const) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
      throw new CcaError('CCA-E0106', { reason: `${name} must be a whole number ≥ 0, got ${String(v)}` });
    }
  }
}

/** A read at `at` (0: the head), refused as etcd refuses it: in the future (CCA-E0102) or compacted away (CCA-E0101). */
export function checkReadRevision(at: number, head: number, compactRevision: number): void {
  if (at > head) throw new CcaError('CCA-E0102', { revision: at, current: head });
  if (at !== 0 && at < compactRevision) throw new CcaError('CCA-E0101', { revision: at, compactRevision });
}

/** `compact(revision)`'s argument is a whole number (CCA-E0106). */
export function checkCompactRevision(revision: number): void {
  if (!Number.isSafeInteger(revision) || revision < 0) {
    throw new CcaError('CCA-E0106', { reason: `compact revision must be a whole number, got ${String(revision)}` });
  }
}

/** A compaction moves forward and not past the head: CCA-E0102 beyond it, CCA-E0101 at or below the last one. */
export function checkCompactTarget(revision: number, head: number, compactRevision: number): void {
  if (revision > head) throw new CcaError('CCA-E0102', { revision, current: head });
  if (revision <= compactRevision) throw new CcaError('CCA-E0101', { revision, compactRevision });
}

/** The keys a watch follows, its request checked (CCA-E0106): key or prefix (none: every key), a whole start revision. */
export function watchInterval(req: WatchRequest): KeyInterval {
  if (req.key !== undefined && req.prefix !== undefined) {
    throw new CcaError('CCA-E0106', { reason: 'watch takes key or prefix, not both' });
  }
  const iv = req.key !== undefined ? intervalOf({ key: req.key }) : intervalOf({ prefix: req.prefix ?? '' });
  if (req.fromRevision !== undefined && (!Number.isSafeInteger(req.fromRevision) || req.fromRevision < 0)) {
    throw new CcaError('CCA-E0106', { reason: `fromRevision must be a whole number ≥ 0, got ${String(req.fromRevision)}` });
  }
  return iv;
}

export function checkCompare(c: Compare): void {
  checkKey(c.key);
  const ops = ['=', '!=', '<', '>'];
  if (!ops.includes(c.op)) throw new CcaError('CCA-E0114', { key: c.key, reason: `unknown operator ${JSON.stringify(c.op)}` });
  if (c.target === 'value') {
    if (typeof c.value !== 'string') throw new CcaError('CCA-E0114', { key: c.key, reason: 'a value compare needs a string' });
  } else if (['version', 'createRevision', 'modRevision', 'lease'].includes(c.target)) {
    if (typeof c.value !== 'number' || !Number.isSafeInteger(c.value)) {
      throw new CcaError('CCA-E0114', { key: c.key, reason: `a ${c.target} compare needs a whole number` });
    }
  } else {
    throw new CcaError('CCA-E0114', { key: c.key, reason: `unknown target ${JSON.stringify(c.target)}` });
  }
}

/** etcd's applyCompare: a missing key fails any value compare and compares as zeros otherwise. */
export function evalCompare(c: Compare, kv: KeyValue | undefined): boolean {
  let result: number;
  if (c.target === 'value') {
    if (!kv) return false;
    result = compareKeys(kv.value, c.value as string);
  } else {
    const actual = kv ? kv[c.target] : 0;
    const want = c.value as number;
    result = actual === want ? 0 : actual < want ? -1 : 1;
  }
  switch (c.op) {
    case '=':
      return result === 0;
    case '!=':
      return result !== 0;
    case '<':
      return result < 0;
    case '>':
      return result > 0;
  }
}

export function checkLeaseTtl(ttl: number): void {
  if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > limits.maxLeaseTtl) {
    throw new CcaError('CCA-E0108', { ttl: String(ttl), max: limits.maxLeaseTtl });
  }
}

/** Apply limit/reverse/keysOnly/countOnly to the full, key-ordered result of a range. */
export function shapeRange(all: KeyValue[], req: RangeRequest): { kvs: KeyValue[]; count: number; more: boolean } {
  const count = all.length;
  if (req.countOnly) return { kvs: [], count, more: false };
  let kvs = req.reverse ? all.slice().reverse() : all;
  const limit = req.limit ?? 0;
  const more = limit > 0 && count > limit;
  if (more) kvs = kvs.slice(0, limit);
  if (req.keysOnly) kvs = kvs.map((kv) => ({ ...kv, value: '' }));
  return { kvs, count, more };
}
