/**
 * The fact store: etcd v3 semantics over any backend. Names and shapes here are
 * fixed; every other part of ccattler and the external checks depend on them.
 */

export interface KeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
  /** 0 = no lease. */
  lease: number;
}

export type CompareTarget = 'value' | 'version' | 'createRevision' | 'modRevision' | 'lease';
export type CompareOp = '=' | '!=' | '<' | '>';

export interface Compare {
  key: string;
  target: CompareTarget;
  op: CompareOp;
  value: string | number;
}

/**
 * Exactly one of `key` (one key), `prefix` (every key starting with it; '' = all)
 * or `start` (keys in [start, end), or from start on when `end` is omitted).
 */
export interface RangeRequest {
  key?: string;
  prefix?: string;
  start?: string;
  end?: string;
  /** Read at this revision; omitted or 0 = the current one. */
  revision?: number;
  /** 0 or omitted = no limit. */
  limit?: number;
  reverse?: boolean;
  keysOnly?: boolean;
  countOnly?: boolean;
}

export interface RangeResponse {
  kvs: KeyValue[];
  /** How many keys the range holds, regardless of `limit`. */
  count: number;
  more: boolean;
  /** The store's current revision when the range was served. */
  revision: number;
}

export type Op =
  | { put: { key: string; value: string; lease?: number; prevKv?: boolean } }
  | { delete: { key: string; prefix?: boolean; prevKv?: boolean } }
  | { range: RangeRequest };

export type OpResponse =
  | { put: { prevKv?: KeyValue } }
  | { delete: { deleted: number; prevKvs?: KeyValue[] } }
  | { range: { kvs: KeyValue[]; count: number; more: boolean } };

export interface TxnRequest {
  compare: Compare[];
  success: Op[];
  failure?: Op[];
}

export interface TxnResponse {
  succeeded: boolean;
  /** The revision this txn committed at, or the current revision if it changed nothing. */
  revision: number;
  responses: OpResponse[];
}

export interface WatchEvent {
  type: 'put' | 'delete';
  /** For a delete: the key with modRevision = the delete's revision, empty value, version 0. */
  kv: KeyValue;
  prevKv?: KeyValue;
}

export interface WatchBatch {
  revision: number;
  events: WatchEvent[];
}

export interface WatchRequest {
  key?: string;
  prefix?: string;
  /** Deliver every event at or after this revision; omitted = from the next one. */
  fromRevision?: number;
  prevKv?: boolean;
  signal?: AbortSignal;
}

/** Leases one leasesTimeToLive call reads at most (`limits.maxLeasesPerRead`; callers chunk by it). */
export const MAX_LEASES_PER_READ = 1_000;

/** A lease's remaining and granted TTL in seconds; -1 and 0 for a lease that is gone. */
export interface LeaseTtl {
  ttl: number;
  grantedTtl: number;
}

export interface Store {
  revision(): Promise<number>;
  get(key: string, opts?: { revision?: number }): Promise<KeyValue | null>;
  /**
   * Several keys at the head in one read at one revision (etcd: a txn of ranges), in the
   * order asked, null for an absent one; at most `limits.maxTxnOps` keys (CCA-E0109).
   */
  getMany(keys: readonly string[]): Promise<(KeyValue | null)[]>;
  range(req: RangeRequest): Promise<RangeResponse>;
  put(
    key: string,
    value: string,
    opts?: { lease?: number; prevKv?: boolean },
  ): Promise<{ revision: number; prevKv?: KeyValue }>;
  delete(
    key: string,
    opts?: { prefix?: boolean; prevKv?: boolean },
  ): Promise<{ revision: number; deleted: number; prevKvs?: KeyValue[] }>;
  txn(req: TxnRequest): Promise<TxnResponse>;
  watch(req: WatchRequest): AsyncIterable<WatchBatch>;
  grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }>;
  /** Throws CCA-E0107 once the lease expired or was revoked. */
  keepAlive(id: number): Promise<{ ttl: number }>;
  revokeLease(id: number): Promise<{ revision: number }>;
  /** For an unknown lease: ttl -1, grantedTtl 0, no keys (as etcd answers). */
  leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }>;
  /**
   * Several leases' TTLs (no keys), in the order asked, an unknown one as ttl -1, grantedTtl 0:
   * one read where the backend can (the node controller reads every node's lease each step).
   * At most `limits.maxLeasesPerRead` ids (CCA-E0128).
   */
  leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]>;
  leases(): Promise<{ id: number }[]>;
  compact(revision: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The lane of `store` for requests a person waits on (PostgresStore.interactive: reads on
 * connections of their own, writes ahead of the background's), or `store` itself on a
 * backend with one lane.
 */
export function interactiveLane(store: Store): Store {
  const lanes = store as Store & { interactive?: () => Store };
  return typeof lanes.interactive === 'function' ? lanes.interactive() : store;
}
