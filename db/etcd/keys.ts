import type { IKeyValue } from 'etcd3';
import type { KeyInterval } from '../keyspace.js';
import type { KeyValue } from '../store.js';

/** etcd's "everything from key on" / "the whole keyspace" marker. */
const ZERO = Buffer.from([0]);

/** The smallest byte string greater than every string starting with `b`; undefined = none. */
function bytesPrefixEnd(b: Buffer): Buffer | undefined {
  const end = Buffer.from(b);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return undefined;
}

/**
 * One store's slice of a shared etcd: every key is stored as `prefix + key` and returned
 * without the prefix. Ranges are clipped to [prefix, prefixEnd), so a range, delete or
 * watch can never reach another prefix's keys. UTF-8 is prefix-free per code point, so
 * "starts with p" on strings is exactly "starts with utf8(p)" on etcd's bytes.
 */
export class EtcdKeys {
  readonly prefixBytes: Buffer;
  /** Exclusive upper bound of the namespace; undefined = to the end of etcd's keyspace. */
  private readonly upper: Buffer | undefined;

  constructor(readonly prefix: string) {
    this.prefixBytes = Buffer.from(prefix, 'utf8');
    this.upper = bytesPrefixEnd(this.prefixBytes);
  }

  key(k: string): Buffer {
    return Buffer.from(this.prefix + k, 'utf8');
  }

  /** An etcd [key, range_end) for a Store interval (already validated by intervalOf). */
  range(iv: KeyInterval): { key: Buffer; range_end?: Buffer } {
    if (iv.single) return { key: this.key(iv.start) };
    const start = this.key(iv.start);
    const end = iv.end !== undefined ? this.key(iv.end) : this.upper;
    return { key: start.length > 0 ? start : ZERO, range_end: end ?? ZERO };
  }

  /** Any key of this namespace, for requests where only the revision matters. */
  probeKey(): Buffer {
    return this.prefixBytes.length > 0 ? this.prefixBytes : ZERO;
  }

  owns(raw: Buffer): boolean {
    return raw.length >= this.prefixBytes.length && raw.subarray(0, this.prefixBytes.length).equals(this.prefixBytes);
  }

  unkey(raw: Buffer): string {
    return raw.subarray(this.prefixBytes.length).toString('utf8');
  }

  kv(e: IKeyValue): KeyValue {
    return {
      key: this.unkey(e.key),
      value: e.value.toString('utf8'),
      createRevision: Number(e.create_revision),
      modRevision: Number(e.mod_revision),
      version: Number(e.version),
      lease: Number(e.lease),
    };
  }
}

/** Normalise an etcd URL path to a prefix that ends in '/' (or '' for the whole keyspace). */
export function prefixFromPath(pathname: string): string {
  const decoded = pathname
    .split('/')
    .map((seg) => decodeURIComponent(seg))
    .join('/');
  if (decoded === '' || decoded === '/') return '';
  return decoded.endsWith('/') ? decoded : `${decoded}/`;
}
