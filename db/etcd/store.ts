import { Etcd3, type IDuplexStream, type ILeaseKeepAliveRequest, type ILeaseKeepAliveResponse, type IOptions } from 'etcd3';
import { z } from 'zod';
import { CcaError } from '../../core/diagnostics/index.js';
import { checkCompactRevision, checkLeaseIds, checkLeaseTtl, checkRangeOptions, compareKeys, intervalOf } from '../keyspace.js';
import { mapLimit } from '../../core/map-limit.js';
import { StoreShortcuts } from '../store-shortcuts.js';
import type {
  Op,
  RangeRequest,
  RangeResponse,
  Store,
  TxnRequest,
  TxnResponse,
  WatchBatch,
  WatchRequest,
  LeaseTtl,
} from '../store.js';
import { checkLease, deleteInterval, validateTxn } from '../txn-eval.js';
import { classify, translate } from './errors.js';
import { etcdCredentials } from './tls.js';
import { EtcdKeys, prefixFromPath } from './keys.js';
import { leaseTag, newLeaseId, ownsLease, unusedLeaseId } from './leases.js';
import { decodeBranch, decodePut, decodeRange, mapPut, mapRange, mapTxn } from './txn.js';
import { closeStream, watchEtcd, type WatchStream } from './watch.js';

export interface EtcdStoreOptions {
  /** Deadline of each unary call, in ms. Watches are streams and have none. */
  callTimeoutMs?: number;
  /** How long to connect before the first call fails, in ms. */
  dialTimeoutMs?: number;
}

export interface EtcdTarget {
  hosts: string[];
  prefix: string;
  auth?: { username: string; password: string };
  /** etcd+https://: TLS, with these PEM files (paths) when given; the system roots otherwise. */
  tls?: { ca?: string; cert?: string; key?: string };
}

/** The query of an etcd+https:// URL: the files of its TLS client settings, nothing else. */
const tlsQuery = z
  .object({ ca: z.string().min(1).optional(), cert: z.string().min(1).optional(), key: z.string().min(1).optional() })
  .strict()
  .refine((q) => (q.cert === undefined) === (q.key === undefined), { message: 'cert= and key= go together (a client certificate and its key)' });

/**
 * `etcd://[user:pass@]host:port[,host:port…]/some/prefix` → hosts and a '/'-terminated prefix;
 * `etcd+https://…/prefix?ca=FILE&cert=FILE&key=FILE` the same over TLS, trusting `ca` (else
 * the system roots) and presenting a client certificate when etcd runs --client-cert-auth.
 */
export function parseEtcdUrl(url: string): EtcdTarget {
  const m = /^etcd(\+https)?:\/\/([^/?]*)([^?]*)(?:\?(.*))?$/i.exec(url);
  if (!m || !m[2]) throw new CcaError('CCA-E0116', { url, reason: 'expected etcd://host:port/prefix or etcd+https://host:port/prefix?ca=FILE' });
  const secure = m[1] !== undefined;
  let authority = m[2];
  let auth: EtcdTarget['auth'];
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const [user, pass = ''] = authority.slice(0, at).split(':');
    auth = { username: decodeURIComponent(user!), password: decodeURIComponent(pass) };
    authority = authority.slice(at + 1);
  }
  const hosts = authority.split(',').filter((h) => h.length > 0);
  if (hosts.length === 0) throw new CcaError('CCA-E0116', { url, reason: 'no host given' });
  const query = Object.fromEntries(new URLSearchParams(m[4] ?? ''));
  if (!secure && Object.keys(query).length > 0) {
    throw new CcaError('CCA-E0116', { url, reason: `etcd:// takes no parameters (${Object.keys(query).join(', ')}); TLS settings need etcd+https://` });
  }
  const q = tlsQuery.safeParse(query);
  if (!q.success) {
    const i = q.error.issues[0]!;
    throw new CcaError('CCA-E0116', { url, reason: i.code === 'unrecognized_keys' ? `unknown parameter ${i.keys.join(', ')} (known: ca, cert, key)` : i.message });
  }
  const tls = Object.fromEntries(Object.entries(q.data).filter(([, v]) => v !== undefined)) as NonNullable<EtcdTarget['tls']>;
  return {
    hosts: hosts.map((h) => `${secure ? 'https' : 'http'}://${h}`),
    prefix: prefixFromPath(m[3] ?? ''),
    ...(auth ? { auth } : {}),
    ...(secure ? { tls } : {}),
  };
}

/**
 * gRPC's default of 4 MiB per answer is less than a read controllers make (a node's
 * assignments each hold a spec of up to ~360 kB): what one answer from etcd may take.
 */
export const ETCD_CLIENT = { maxReceiveBytes: 512 * 1024 * 1024 } as const;

/** What `new Etcd3` needs to reach a target: hosts, user, and TLS credentials read from their files. */
export function etcdConnection(t: EtcdTarget): Pick<IOptions, 'hosts' | 'auth' | 'credentials'> {
  return {
    hosts: t.hosts,
    ...(t.auth ? { auth: t.auth } : {}),
    ...(t.tls ? { credentials: etcdCredentials(t.tls) } : {}),
  };
}

/** Lease reads in flight at once for leasesTimeToLive (etcd answers each on its own). */
const LEASE_READS = 8;

/** etcd3 retries "recoverable" failures, which could apply a write twice: every call here runs once. */
const once = {
  execute: async (fn: (ctx: { signal: AbortSignal; attempt: number }) => unknown) =>
    await fn({ signal: new AbortController().signal, attempt: 1 }),
} as unknown as NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/**
 * The Store over a real etcd (v3.4+), through the etcd3 client.
 *
 * - Keys live under the URL's prefix (EtcdKeys); nothing outside it is read, written,
 *   deleted or watched. Lease ids carry a tag of the prefix (leases.ts).
 * - Revisions are etcd's own, which are global to the etcd cluster: on a shared etcd a
 *   fresh prefix starts at whatever revision etcd is at, and other prefixes' writes
 *   advance it (gaps inside one prefix's history are normal there).
 * - Compaction is cluster-wide in etcd. `compact(R)` compacts etcd at R−1: etcd 3.4 drops a
 *   tombstone at exactly its compact revision and cannot give the prevKv of an event at it,
 *   so keeping one more revision lets a watch from R deliver everything at R, as the other
 *   backends do. Reads and watches below R are refused with CCA-E0101 (compactRevision R).
 * - Every put is idempotent, decided inside etcd (txn.ts).
 */
export class EtcdStore extends StoreShortcuts implements Store {
  private head = 0;
  private isClosed = false;
  private readonly closing = new AbortController();
  private readonly keys: EtcdKeys;
  private readonly tag: number;
  private readonly target: string;

  private constructor(
    private readonly client: Etcd3,
    prefix: string,
    hosts: string[],
  ) {
    super();
    this.keys = new EtcdKeys(prefix);
    this.tag = leaseTag(prefix);
    this.target = hosts.join(',');
  }

  static async open(url: string, opts: EtcdStoreOptions = {}): Promise<EtcdStore> {
    const t = parseEtcdUrl(url);
    const timeout = opts.callTimeoutMs ?? 10_000;
    const client = new Etcd3({
      ...etcdConnection(t),
      dialTimeout: opts.dialTimeoutMs ?? 5_000,
      faultHandling: { global: once, host: () => once },
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
      grpcOptions: { 'grpc.max_receive_message_length': ETCD_CLIENT.maxReceiveBytes },
    });
    const store = new EtcdStore(client, t.prefix, t.hosts);
    try {
      await store.revision();
    } catch (e) {
      client.close();
      throw e;
    }
    return store;
  }

  /** The key prefix this store lives under ('' = the whole keyspace). */
  get prefix(): string {
    return this.keys.prefix;
  }

  async revision(): Promise<number> {
    this.enter();
    const r = await this.call(false, () => this.client.kv.range({ key: this.keys.probeKey(), count_only: true }));
    return this.note(r.header.revision);
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    this.enter();
    intervalOf(req);
    checkRangeOptions(req);
    const rr = mapRange(this.keys, req);
    const at = req.revision ?? 0;
    try {
      if (at >= 2) {
        // Prove at−1 is not compacted in etcd (see the class comment), in the same request.
        const t = await this.client.kv.txn({
          compare: [],
          success: [{ request_range: rr }, { request_range: { key: this.keys.probeKey(), revision: at - 1, count_only: true } }],
        });
        const revision = this.note(t.header.revision);
        return { ...decodeRange(this.keys, t.responses[0]!.response_range), revision };
      }
      const r = await this.client.kv.range(rr);
      const revision = this.note(r.header.revision);
      return { ...decodeRange(this.keys, r), revision };
    } catch (e) {
      throw await this.readFailure(e, [at]);
    }
  }

  override async put(key: string, value: string, opts: { lease?: number; prevKv?: boolean } = {}) {
    this.enter();
    const op = { key, value, ...opts };
    validateTxn({ compare: [], success: [{ put: op }] });
    const [mapped] = this.ownLeases([{ put: op }]) as [{ put: typeof op }];
    const t = await this.call(true, () => this.client.kv.txn(mapPut(this.keys, mapped.put)), opts.lease);
    const revision = this.note(t.header.revision);
    const { prevKv } = decodePut(this.keys, t, opts.prevKv ?? false);
    return prevKv ? { revision, prevKv } : { revision };
  }

  override async delete(key: string, opts: { prefix?: boolean; prevKv?: boolean } = {}) {
    this.enter();
    const iv = deleteInterval({ key, ...opts });
    const r = await this.call(true, () =>
      this.client.kv.deleteRange({ ...this.keys.range(iv), prev_kv: opts.prevKv ?? false }),
    );
    const revision = this.note(r.header.revision);
    const deleted = Number(r.deleted);
    return opts.prevKv ? { revision, deleted, prevKvs: r.prev_kvs.map((kv) => this.keys.kv(kv)) } : { revision, deleted };
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    this.enter();
    validateTxn(req);
    const branches = [req.success, req.failure ?? []];
    const mapped = { compare: req.compare, success: this.ownLeases(req.success), failure: this.ownLeases(req.failure ?? []) };
    let t;
    try {
      t = await this.client.kv.txn(mapTxn(this.keys, mapped));
    } catch (e) {
      const ranges = branches.flat().flatMap((op) => ('range' in op ? [op.range.revision ?? 0] : []));
      const lease = branches.flat().find((op) => 'put' in op && (op.put.lease ?? 0) !== 0);
      const writes = branches.flat().some((op) => !('range' in op));
      throw await this.readFailure(e, ranges, lease && 'put' in lease ? lease.put.lease : undefined, writes);
    }
    const revision = this.note(t.header.revision);
    const ops = t.succeeded ? req.success : req.failure ?? [];
    return { succeeded: t.succeeded, revision, responses: decodeBranch(this.keys, ops, t.responses) };
  }

  watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    this.enter();
    return watchEtcd(
      {
        keys: this.keys,
        openStream: () => this.client.watchClient.watch(),
        seen: () => this.head,
        note: (rev) => void this.note(rev),
        closing: this.closing.signal,
      },
      req,
    );
  }

  async grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    this.enter();
    checkLeaseTtl(ttlSeconds);
    for (let attempt = 0; ; attempt++) {
      const id = newLeaseId(this.tag);
      try {
        const r = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds, ID: id });
        if (r.error) throw new CcaError('CCA-E0118', { backend: 'etcd', reason: r.error });
        this.note(r.header.revision);
        // etcd raises a TTL below its minimum (1.5 × election timeout, 2 s by default): say so.
        return { id, ttl: Number(r.TTL) };
      } catch (e) {
        if (classify(e).kind === 'leaseExists' && attempt < 5) continue;
        throw translate(e, { write: true, target: this.target });
      }
    }
  }

  async keepAlive(id: number): Promise<{ ttl: number }> {
    this.enter();
    if (!ownsLease(this.tag, id)) throw new CcaError('CCA-E0107', { lease: id });
    const stream = await this.call(false, () => this.client.leaseClient.leaseKeepAlive());
    const ttl = await keepAliveOnce(stream, id, 10_000).catch((e: unknown) => {
      throw translate(e, { write: false, target: this.target, lease: id });
    });
    if (ttl <= 0) throw new CcaError('CCA-E0107', { lease: id });
    return { ttl };
  }

  async revokeLease(id: number): Promise<{ revision: number }> {
    this.enter();
    if (!ownsLease(this.tag, id)) throw new CcaError('CCA-E0107', { lease: id });
    const r = await this.call(true, () => this.client.leaseClient.leaseRevoke({ ID: id }), id);
    return { revision: this.note(r.header.revision) };
  }

  async leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }> {
    this.enter();
    const unknown = { ttl: -1, grantedTtl: 0, keys: [] };
    if (!ownsLease(this.tag, id)) return unknown;
    const r = await this.call(false, () => this.client.leaseClient.leaseTimeToLive({ ID: id, keys: true }));
    const ttl = Number(r.TTL);
    if (ttl < 0) return unknown;
    const keys = r.keys.filter((k) => this.keys.owns(k)).map((k) => this.keys.unkey(k));
    return { ttl, grantedTtl: Number(r.grantedTTL), keys: keys.sort(compareKeys) };
  }

  /** etcd has no batched lease read: one call per lease, a few at a time. */
  async leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]> {
    this.enter();
    checkLeaseIds(ids);
    return mapLimit(ids, LEASE_READS, async (id) => {
      if (!ownsLease(this.tag, id)) return { ttl: -1, grantedTtl: 0 };
      const r = await this.call(false, () => this.client.leaseClient.leaseTimeToLive({ ID: id, keys: false }));
      const ttl = Number(r.TTL);
      return ttl < 0 ? { ttl: -1, grantedTtl: 0 } : { ttl, grantedTtl: Number(r.grantedTTL) };
    });
  }

  async leases(): Promise<{ id: number }[]> {
    this.enter();
    const r = await this.call(false, () => this.client.leaseClient.leaseLeases());
    return r.leases
      .map((l) => Number(l.ID))
      .filter((id) => ownsLease(this.tag, id))
      .sort((a, b) => a - b)
      .map((id) => ({ id }));
  }

  async compact(revision: number): Promise<void> {
    this.enter();
    checkCompactRevision(revision);
    const current = await this.revision();
    if (revision > current) throw new CcaError('CCA-E0102', { revision, current });
    if (revision === 0) {
      throw new CcaError('CCA-E0101', { revision, compactRevision: await this.compactRevisionBelow(1, 0) });
    }
    try {
      await this.client.kv.compact({ revision: revision - 1 });
    } catch (e) {
      if (classify(e).kind === 'compacted') {
        // etcd is compacted at ≥ revision−1, so a watch from revision−2 is refused with its compact revision.
        throw new CcaError('CCA-E0101', { revision, compactRevision: await this.compactRevisionBelow(revision - 2, revision) });
      }
      throw translate(e, { write: true, target: this.target });
    }
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closing.abort();
    this.client.close();
  }

  private enter(): void {
    if (this.isClosed) throw new CcaError('CCA-E0113');
  }

  private note(revision: string | number): number {
    const r = Number(revision);
    if (r > this.head) this.head = r;
    return r;
  }

  private async call<T>(write: boolean, f: () => Promise<T>, lease?: number): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw translate(e, { write, target: this.target, ...(lease !== undefined ? { lease } : {}) });
    }
  }

  /**
   * A lease id outside this prefix's tag space is unknown here, as on any other backend. It
   * is swapped for this tag's id 0 (never granted: newLeaseId draws from 1), so etcd refuses
   * it exactly when the branch holding it is taken, as the other backends do.
   */
  private ownLeases(ops: Op[]): Op[] {
    return ops.map((op) => {
      if (!('put' in op)) return op;
      const lease = op.put.lease ?? 0;
      checkLease(lease);
      return lease !== 0 && !ownsLease(this.tag, lease) ? { put: { ...op.put, lease: unusedLeaseId(this.tag) } } : op;
    });
  }

  /** Coded errors for a failed read (or txn), with the facts etcd's message leaves out. */
  private async readFailure(e: unknown, revisions: number[], lease?: number, write = false): Promise<CcaError> {
    const kind = classify(e).kind;
    const past = revisions.filter((r) => r > 0);
    if (kind === 'compacted' && past.length > 0) {
      const lowest = Math.min(...past);
      const compactRevision = await this.compactRevisionBelow(Math.max(1, lowest - 1), lowest + 1);
      const first = past.find((r) => r < compactRevision) ?? lowest;
      return new CcaError('CCA-E0101', { revision: first, compactRevision }, { cause: e });
    }
    if (kind === 'future' && past.length > 0) {
      const current = await this.revision().catch(() => this.head);
      const first = past.find((r) => r > current) ?? Math.max(...past);
      return new CcaError('CCA-E0102', { revision: first, current }, { cause: e });
    }
    return translate(e, { write, target: this.target, ...(lease !== undefined ? { lease } : {}) });
  }

  /**
   * The store's compact revision, learnt from etcd when `rev` is known to be compacted:
   * a watch from a compacted revision is refused with etcd's compact revision (the only
   * API that reports it). The store's is one above etcd's.
   */
  private async compactRevisionBelow(rev: number, fallback: number): Promise<number> {
    let stream: WatchStream | undefined;
    try {
      stream = await this.client.watchClient.watch();
      const s = stream;
      return await new Promise<number>((resolve) => {
        const timer = setTimeout(() => resolve(fallback), 1_000);
        s.on('data', (res) => {
          const c = Number(res.compact_revision);
          if (c > 0) {
            clearTimeout(timer);
            resolve(c + 1);
          }
        });
        s.on('error', () => {
          clearTimeout(timer);
          resolve(fallback);
        });
        s.write({ create_request: { key: this.keys.probeKey(), start_revision: Math.max(1, rev) } });
      });
    } catch {
      return fallback;
    } finally {
      if (stream) closeStream(stream);
    }
  }
}

/** One keepalive on its own stream: the Store's keepAlive is a single renewal, not a loop. */
function keepAliveOnce(
  stream: IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>,
  id: number,
  timeoutMs: number,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new Error('keepalive timed out'))), timeoutMs);
    let done = false;
    function finish(f: () => void) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      closeStream(stream);
      f();
    }
    stream.on('data', (res) => finish(() => resolve(Number(res.TTL))));
    stream.on('error', (err) => finish(() => reject(err)));
    stream.on('end', () => finish(() => reject(new Error('keepalive stream ended'))));
    stream.write({ ID: id });
  });
}
