import type { Etcd3, ICompare, IKeyValue, IRangeRequest, IRequestOp, IResponseOp, IWatchResponse } from 'etcd3';
import { isCcaError, messageOf } from '../../core/diagnostics/index.js';
import { prefixEnd } from '../../db/keyspace.js';
import type { Compare, KeyValue, Op, OpResponse, RangeRequest, Store, TxnRequest, WatchBatch } from '../../db/store.js';
import { NO_SUCH_LEASE, type HOp, type WatchSpec } from './differential-gen.js';

/** What an operation answered, in the history's own terms (offset revisions, logical leases, no prefix). */
export type Result = { ok: unknown } | { err: string; compactRevision?: number };

export interface WatchOutcome {
  batches: WatchBatch[];
  err?: { code: string; compactRevision?: number };
}

export interface DiffBackend {
  readonly name: string;
  /** Start a history: fresh key prefix, base revision, lease map. */
  begin(history: string): Promise<void>;
  exec(op: HOp): Promise<Result>;
  /** Wait until every watch opened in this history reached `revision` (offset) or failed. */
  watchOutcomes(revision: number): Promise<Map<number, WatchOutcome>>;
  /** Revoke this history's leases and stop its watches (not compared). */
  end(): Promise<void>;
  close(): Promise<void>;
}

/** A lease id that no backend ever hands out (etcd's are random 63-bit, the stores' are small or tagged). */
const BOGUS_LEASE = 2 ** 40;

/** Offsets ↔ physical revisions, logical ↔ physical leases, prefixed ↔ bare keys. */
class Frame {
  base = 1;
  prefix = '';
  private out = new Map<number, string>();
  private back = new Map<string, number>();
  granted = 0;

  reset(prefix: string, base: number): void {
    this.prefix = prefix;
    this.base = base;
    this.out.clear();
    this.back.clear();
    this.granted = 0;
  }
  /** Offset → physical; 0 (and below) stays as it is, so "missing key" and "current" keep their meaning. */
  rev(offset: number): number {
    return offset >= 1 ? offset + this.base - 1 : offset;
  }
  /** Physical → offset. */
  off(rev: number | string): number {
    const r = Number(rev);
    return r === 0 ? 0 : r - this.base + 1;
  }
  grant(physical: string | number): number {
    const logical = ++this.granted;
    this.out.set(logical, String(physical));
    this.back.set(String(physical), logical);
    return logical;
  }
  leaseOut(logical: number): string {
    if (logical === 0) return '0';
    if (logical === NO_SUCH_LEASE) return String(BOGUS_LEASE);
    return this.out.get(logical) ?? String(BOGUS_LEASE);
  }
  leaseIn(physical: number | string): number | string {
    const p = String(physical);
    if (p === '0') return 0;
    return this.back.get(p) ?? `unknown lease ${p}`;
  }
  knows(physical: number | string): boolean {
    return this.back.has(String(physical));
  }
  physicalLeases(): string[] {
    return [...this.out.values()];
  }
  key(k: string): string {
    return this.prefix + k;
  }
  bare(k: string): string {
    if (!k.startsWith(this.prefix)) return `outside prefix: ${k}`;
    return k.slice(this.prefix.length);
  }
  kv(kv: { key: string; value: string; createRevision: number | string; modRevision: number | string; version: number | string; lease: number | string }): KeyValue {
    return {
      key: this.bare(kv.key),
      value: kv.value,
      createRevision: this.off(kv.createRevision),
      modRevision: this.off(kv.modRevision),
      version: Number(kv.version),
      lease: this.leaseIn(kv.lease) as number,
    };
  }
  range(r: RangeRequest): RangeRequest {
    const out: RangeRequest = { ...r };
    if (r.revision !== undefined) out.revision = this.rev(r.revision);
    if (r.key !== undefined) out.key = this.key(r.key);
    else if (r.prefix !== undefined) out.prefix = this.key(r.prefix);
    else {
      out.start = this.key(r.start!);
      const end = r.end !== undefined ? this.key(r.end) : prefixEnd(this.prefix);
      if (end !== undefined) out.end = end;
    }
    return out;
  }
  compare(c: Compare): Compare {
    const key = this.key(c.key);
    if (c.target === 'lease') return { ...c, key, value: Number(this.leaseOut(c.value as number)) };
    if (c.target === 'createRevision' || c.target === 'modRevision') return { ...c, key, value: this.rev(c.value as number) };
    return { ...c, key };
  }
  op(op: Op): Op {
    if ('put' in op) {
      const lease = op.put.lease ?? 0;
      return { put: { ...op.put, key: this.key(op.put.key), ...(lease !== 0 ? { lease: Number(this.leaseOut(lease)) } : {}) } };
    }
    if ('delete' in op) return { delete: { ...op.delete, key: this.key(op.delete.key) } };
    return { range: this.range(op.range) };
  }
  opResponse(r: OpResponse): OpResponse {
    if ('put' in r) return { put: r.put.prevKv ? { prevKv: this.kv(r.put.prevKv) } : {} };
    if ('delete' in r) {
      return { delete: r.delete.prevKvs ? { deleted: r.delete.deleted, prevKvs: r.delete.prevKvs.map((kv) => this.kv(kv)) } : { deleted: r.delete.deleted } };
    }
    return { range: { kvs: r.range.kvs.map((kv) => this.kv(kv)), count: r.range.count, more: r.range.more } };
  }
  batch(b: WatchBatch): WatchBatch {
    return {
      revision: this.off(b.revision),
      events: b.events.map((e) => (e.prevKv ? { type: e.type, kv: this.kv(e.kv), prevKv: this.kv(e.prevKv) } : { type: e.type, kv: this.kv(e.kv) })),
    };
  }
}

interface OpenWatch {
  spec: WatchSpec;
  batches: WatchBatch[];
  err?: { code: string; compactRevision?: number };
  stop(): void;
}

async function waitFor(watches: OpenWatch[], physical: number, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (watches.every((w) => w.err || (w.batches[w.batches.length - 1]?.revision ?? 0) >= physical)) return;
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Any Store (Memory, Postgres, EtcdStore) driven through the Store interface. */
export class StoreBackend implements DiffBackend {
  private store: Store | undefined;
  private readonly f = new Frame();
  private watches: OpenWatch[] = [];

  /**
   * `fresh`: a new store per history (MemoryStore: revision 1, no prefix). Otherwise one
   * shared store, a key prefix per history and revisions as offsets from a start marker.
   */
  constructor(
    readonly name: string,
    private readonly open: () => Promise<Store>,
    private readonly fresh: boolean,
  ) {}

  async begin(history: string): Promise<void> {
    this.watches = [];
    if (this.fresh) {
      await this.store?.close();
      this.store = await this.open();
      this.f.reset('', await this.store.revision());
      return;
    }
    this.store ??= await this.open();
    // A write outside the history's prefix: its revision is above every earlier compaction.
    const { revision } = await this.store.put(`diff/${history}~start`, 'x');
    this.f.reset(`diff/${history}/`, revision);
  }

  async exec(op: HOp): Promise<Result> {
    const s = this.store!;
    const f = this.f;
    try {
      switch (op.t) {
        case 'put': {
          const r = await s.put(f.key(op.key), op.value, {
            ...(op.lease !== 0 ? { lease: Number(f.leaseOut(op.lease)) } : {}),
            prevKv: op.prevKv,
          });
          return { ok: r.prevKv ? { revision: f.off(r.revision), prevKv: f.kv(r.prevKv) } : { revision: f.off(r.revision) } };
        }
        case 'delete': {
          const r = await s.delete(f.key(op.key), { prefix: op.prefix, prevKv: op.prevKv });
          return {
            ok: { revision: f.off(r.revision), deleted: r.deleted, ...(r.prevKvs ? { prevKvs: r.prevKvs.map((kv) => f.kv(kv)) } : {}) },
          };
        }
        case 'txn': {
          const req: TxnRequest = { compare: op.req.compare.map((c) => f.compare(c)), success: op.req.success.map((o) => f.op(o)) };
          if (op.req.failure) req.failure = op.req.failure.map((o) => f.op(o));
          const r = await s.txn(req);
          return { ok: { succeeded: r.succeeded, revision: f.off(r.revision), responses: r.responses.map((x) => f.opResponse(x)) } };
        }
        case 'range': {
          const r = await s.range(f.range(op.req));
          return { ok: { kvs: r.kvs.map((kv) => f.kv(kv)), count: r.count, more: r.more, revision: f.off(r.revision) } };
        }
        case 'revision':
          return { ok: { revision: f.off(await s.revision()) } };
        case 'grant': {
          const r = await s.grantLease(op.ttl);
          return { ok: { id: f.grant(r.id), ttl: r.ttl } };
        }
        case 'keepAlive':
          return { ok: await s.keepAlive(Number(f.leaseOut(op.lease))) };
        case 'revoke': {
          const r = await s.revokeLease(Number(f.leaseOut(op.lease)));
          return { ok: { revision: f.off(r.revision) } };
        }
        case 'ttl': {
          const r = await s.leaseTimeToLive(Number(f.leaseOut(op.lease)));
          const keys = r.keys.filter((k) => k.startsWith(f.prefix)).map((k) => f.bare(k));
          return { ok: { ttl: r.ttl >= 0 ? 'alive' : r.ttl, grantedTtl: r.grantedTtl, keys } };
        }
        case 'leases': {
          const r = await s.leases();
          return { ok: r.filter((l) => f.knows(l.id)).map((l) => f.leaseIn(l.id)).sort() };
        }
        case 'compact':
          await s.compact(f.rev(op.revision));
          return { ok: {} };
        case 'watch':
          this.openWatch(op.w);
          return { ok: {} };
      }
    } catch (e) {
      if (!isCcaError(e)) throw e;
      const c = (e.diagnostic.params as { compactRevision?: number }).compactRevision;
      return e.code === 'CCA-E0101' && c !== undefined ? { err: e.code, compactRevision: f.off(c) } : { err: e.code };
    }
  }

  private openWatch(spec: WatchSpec): void {
    const ac = new AbortController();
    const w: OpenWatch = { spec, batches: [], stop: () => ac.abort() };
    const req = {
      ...(spec.key !== undefined ? { key: this.f.key(spec.key) } : { prefix: this.f.key(spec.prefix!) }),
      ...(spec.fromRevision !== undefined ? { fromRevision: this.f.rev(spec.fromRevision) } : {}),
      prevKv: spec.prevKv,
      signal: ac.signal,
    };
    const it = this.store!.watch(req);
    void (async () => {
      try {
        for await (const b of it) w.batches.push(b);
      } catch (e) {
        if (!isCcaError(e)) throw e;
        const c = (e.diagnostic.params as { compactRevision?: number }).compactRevision;
        w.err = { code: e.code, ...(c !== undefined ? { compactRevision: this.f.off(c) } : {}) };
      }
    })();
    this.watches.push(w);
  }

  async watchOutcomes(revision: number): Promise<Map<number, WatchOutcome>> {
    await waitFor(this.watches, this.f.rev(revision));
    const out = new Map<number, WatchOutcome>();
    for (const w of this.watches) {
      out.set(w.spec.id, { batches: w.batches.map((b) => this.f.batch(b)), ...(w.err ? { err: w.err } : {}) });
    }
    return out;
  }

  async end(): Promise<void> {
    for (const w of this.watches) w.stop();
    this.watches = [];
    if (this.fresh) return;
    for (const id of this.f.physicalLeases()) await this.store!.revokeLease(Number(id)).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.end();
    await this.store?.close();
  }
}

// ---------------------------------------------------------------------------------------
// Raw etcd: the oracle. etcd3's generated clients only, no EtcdStore code.

const B = (s: string) => Buffer.from(s, 'utf8');

/** End our side before cancelling: etcd3 resets the host's gRPC clients on an error of a writable stream. */
function endStream(stream: { end(): void; cancel(): void }): void {
  try {
    stream.end();
    stream.cancel();
  } catch {
    // already closed
  }
}

/** etcd's own error messages → the Store's codes, so errors can be compared. */
function etcdCode(e: unknown): string {
  const m = messageOf(e);
  const table: [RegExp, string][] = [
    [/required revision has been compacted/, 'CCA-E0101'],
    [/required revision is a future revision/, 'CCA-E0102'],
    [/key is not provided/, 'CCA-E0103'],
    [/requested lease not found/, 'CCA-E0107'],
    [/too many operations in txn request/, 'CCA-E0109'],
    [/duplicate key given in txn request/, 'CCA-E0110'],
  ];
  for (const [re, code] of table) if (re.test(m)) return code;
  throw e;
}

function bytesEnd(prefix: string): Buffer {
  const b = B(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const out = Buffer.from(b.subarray(0, i + 1));
      out[i]! += 1;
      return out;
    }
  }
  return Buffer.from([0]);
}

export class RawEtcdBackend implements DiffBackend {
  readonly name = 'etcd';
  private readonly f = new Frame();
  private watches: (OpenWatch & { cancel(): void })[] = [];

  constructor(private readonly client: Etcd3) {}

  async begin(history: string): Promise<void> {
    this.watches = [];
    const r = await this.client.kv.put({ key: B(`diff/${history}~start`), value: B('x') });
    this.f.reset(`diff/${history}/`, Number(r.header.revision));
  }

  private kv(kv: IKeyValue): KeyValue {
    return this.f.kv({
      key: kv.key.toString('utf8'),
      value: kv.value.toString('utf8'),
      createRevision: kv.create_revision,
      modRevision: kv.mod_revision,
      version: kv.version,
      lease: kv.lease,
    });
  }

  private rangeReq(r: RangeRequest): IRangeRequest {
    const k = this.f.key.bind(this.f);
    let key: Buffer;
    let range_end: Buffer | undefined;
    if (r.key !== undefined) key = B(k(r.key));
    else if (r.prefix !== undefined) {
      key = B(k(r.prefix));
      range_end = bytesEnd(k(r.prefix));
    } else {
      key = B(k(r.start!));
      range_end = r.end !== undefined ? B(k(r.end)) : bytesEnd(this.f.prefix);
    }
    return {
      key,
      ...(range_end ? { range_end } : {}),
      revision: this.f.rev(r.revision ?? 0),
      limit: r.limit ?? 0,
      ...(r.reverse ? { sort_order: 'Descend' as const, sort_target: 'Key' as const } : {}),
      keys_only: r.keysOnly ?? false,
      count_only: r.countOnly ?? false,
    };
  }

  private compare(c: Compare): ICompare {
    const key = B(this.f.key(c.key));
    const result = ({ '=': 'Equal', '!=': 'NotEqual', '<': 'Less', '>': 'Greater' } as const)[c.op];
    switch (c.target) {
      case 'value':
        return { key, result, target: 'Value', value: B(c.value as string) };
      case 'version':
        return { key, result, target: 'Version', version: c.value as number };
      case 'createRevision':
        return { key, result, target: 'Create', create_revision: this.f.rev(c.value as number) };
      case 'modRevision':
        return { key, result, target: 'Mod', mod_revision: this.f.rev(c.value as number) };
      case 'lease':
        return { key, result, target: 'Lease', lease: this.f.leaseOut(c.value as number) };
    }
  }

  private op(op: Op): IRequestOp {
    if ('put' in op) {
      return {
        request_put: { key: B(this.f.key(op.put.key)), value: B(op.put.value), lease: this.f.leaseOut(op.put.lease ?? 0), prev_kv: op.put.prevKv ?? false },
      };
    }
    if ('delete' in op) {
      const key = this.f.key(op.delete.key);
      return { request_delete_range: { key: B(key), ...(op.delete.prefix ? { range_end: bytesEnd(key) } : {}), prev_kv: op.delete.prevKv ?? false } };
    }
    return { request_range: this.rangeReq(op.range) };
  }

  private opResponse(op: Op, r: IResponseOp): OpResponse {
    if ('put' in op) {
      const prev = r.response_put.prev_kv;
      return { put: op.put.prevKv && prev ? { prevKv: this.kv(prev) } : {} };
    }
    if ('delete' in op) {
      const d = r.response_delete_range;
      const deleted = Number(d.deleted);
      return { delete: op.delete.prevKv ? { deleted, prevKvs: d.prev_kvs.map((kv) => this.kv(kv)) } : { deleted } };
    }
    const rr = r.response_range;
    return { range: { kvs: rr.kvs.map((kv) => this.kv(kv)), count: Number(rr.count), more: rr.more } };
  }

  /** etcd reports its compact revision only to a watch that starts below it. */
  private async compactRevisionFrom(rev: number): Promise<number | undefined> {
    const stream = await this.client.watchClient.watch();
    try {
      return await new Promise<number | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), 3_000);
        stream.on('data', (res: IWatchResponse) => {
          if (Number(res.compact_revision) > 0) {
            clearTimeout(timer);
            resolve(Number(res.compact_revision));
          }
        });
        stream.on('error', () => undefined);
        stream.write({ create_request: { key: B('\0'), start_revision: Math.max(1, rev) } });
      });
    } finally {
      endStream(stream);
    }
  }

  private async failure(e: unknown, lowestRevision: number): Promise<Result> {
    const code = etcdCode(e);
    if (code !== 'CCA-E0101') return { err: code };
    const c = await this.compactRevisionFrom(lowestRevision);
    return c === undefined ? { err: code } : { err: code, compactRevision: this.f.off(c) };
  }

  async exec(op: HOp): Promise<Result> {
    const kv = this.client.kv;
    const lc = this.client.leaseClient;
    const f = this.f;
    try {
      switch (op.t) {
        case 'put': {
          const r = await kv.put({ key: B(f.key(op.key)), value: B(op.value), lease: f.leaseOut(op.lease), prev_kv: op.prevKv });
          return { ok: op.prevKv && r.prev_kv ? { revision: f.off(r.header.revision), prevKv: this.kv(r.prev_kv) } : { revision: f.off(r.header.revision) } };
        }
        case 'delete': {
          const key = f.key(op.key);
          const r = await kv.deleteRange({ key: B(key), ...(op.prefix ? { range_end: bytesEnd(key) } : {}), prev_kv: op.prevKv });
          return {
            ok: { revision: f.off(r.header.revision), deleted: Number(r.deleted), ...(op.prevKv ? { prevKvs: r.prev_kvs.map((x) => this.kv(x)) } : {}) },
          };
        }
        case 'txn': {
          const failure = op.req.failure ?? [];
          const r = await kv.txn({
            compare: op.req.compare.map((c) => this.compare(c)),
            success: op.req.success.map((o) => this.op(o)),
            failure: failure.map((o) => this.op(o)),
          });
          const ops = r.succeeded ? op.req.success : failure;
          return { ok: { succeeded: r.succeeded, revision: f.off(r.header.revision), responses: ops.map((o, i) => this.opResponse(o, r.responses[i]!)) } };
        }
        case 'range': {
          const r = await kv.range(this.rangeReq(op.req));
          return { ok: { kvs: r.kvs.map((x) => this.kv(x)), count: Number(r.count), more: r.more, revision: f.off(r.header.revision) } };
        }
        case 'revision': {
          const r = await kv.range({ key: B('\0'), count_only: true });
          return { ok: { revision: f.off(r.header.revision) } };
        }
        case 'grant': {
          const r = await lc.leaseGrant({ TTL: op.ttl });
          return { ok: { id: f.grant(r.ID), ttl: Number(r.TTL) } };
        }
        case 'keepAlive': {
          const stream = await lc.leaseKeepAlive();
          const ttl = await new Promise<number>((resolve, reject) => {
            stream.on('data', (res) => resolve(Number(res.TTL)));
            stream.on('error', reject);
            stream.write({ ID: f.leaseOut(op.lease) });
          }).finally(() => endStream(stream));
          // etcd answers TTL 0 for a lease it does not have; the Store throws CCA-E0107 there.
          return ttl > 0 ? { ok: { ttl } } : { err: 'CCA-E0107' };
        }
        case 'revoke': {
          const r = await lc.leaseRevoke({ ID: f.leaseOut(op.lease) });
          return { ok: { revision: f.off(r.header.revision) } };
        }
        case 'ttl': {
          const r = await lc.leaseTimeToLive({ ID: f.leaseOut(op.lease), keys: true });
          const ttl = Number(r.TTL);
          const keys = r.keys
            .map((k) => k.toString('utf8'))
            .filter((k) => k.startsWith(f.prefix))
            .map((k) => f.bare(k))
            .sort((a, b) => Buffer.compare(B(a), B(b)));
          return { ok: { ttl: ttl >= 0 ? 'alive' : ttl, grantedTtl: Number(r.grantedTTL), keys } };
        }
        case 'leases': {
          const r = await lc.leaseLeases();
          return { ok: r.leases.filter((l) => f.knows(l.ID)).map((l) => f.leaseIn(l.ID)).sort() };
        }
        case 'compact':
          await kv.compact({ revision: f.rev(op.revision), physical: true });
          return { ok: {} };
        case 'watch':
          await this.openWatch(op.w);
          return { ok: {} };
      }
    } catch (e) {
      const revs = lowestRevision(op, f);
      return await this.failure(e, revs);
    }
  }

  private async openWatch(spec: WatchSpec): Promise<void> {
    const stream = await this.client.watchClient.watch();
    const key = this.f.key(spec.key ?? spec.prefix!);
    const w: OpenWatch & { cancel(): void } = {
      spec,
      batches: [],
      stop: () => endStream(stream),
      cancel: () => endStream(stream),
    };
    const created = new Promise<void>((resolve) => {
      stream.on('data', (res: IWatchResponse) => {
        if (res.created) resolve();
        if (Number(res.compact_revision) > 0) {
          w.err = { code: 'CCA-E0101', compactRevision: this.f.off(res.compact_revision) };
          resolve();
          return;
        }
        for (const e of res.events) {
          const rev = Number(e.kv.mod_revision);
          const ev =
            spec.prevKv && e.prev_kv
              ? { type: e.type === 'Put' ? ('put' as const) : ('delete' as const), kv: rawKv(e.kv), prevKv: rawKv(e.prev_kv) }
              : { type: e.type === 'Put' ? ('put' as const) : ('delete' as const), kv: rawKv(e.kv) };
          const last = w.batches[w.batches.length - 1];
          if (last && last.revision === rev) last.events.push(ev);
          else w.batches.push({ revision: rev, events: [ev] });
        }
      });
      stream.on('error', () => resolve());
    });
    stream.write({
      create_request: {
        key: B(key),
        ...(spec.key === undefined ? { range_end: bytesEnd(key) } : {}),
        ...(spec.fromRevision !== undefined ? { start_revision: this.f.rev(spec.fromRevision) } : {}),
        prev_kv: spec.prevKv,
      },
    });
    // A live watch starts at etcd's revision when it is created: wait for that before going on.
    await created;
    this.watches.push(w);
  }

  async watchOutcomes(revision: number): Promise<Map<number, WatchOutcome>> {
    await waitFor(this.watches, this.f.rev(revision));
    const out = new Map<number, WatchOutcome>();
    for (const w of this.watches) out.set(w.spec.id, { batches: w.batches.map((b) => this.f.batch(b)), ...(w.err ? { err: w.err } : {}) });
    return out;
  }

  async end(): Promise<void> {
    for (const w of this.watches) w.cancel();
    this.watches = [];
    for (const id of this.f.physicalLeases()) await this.client.leaseClient.leaseRevoke({ ID: id }).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.end();
  }
}

/** A raw etcd KeyValue in the Store's shape, still physical (the Frame maps it later). */
function rawKv(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value.toString('utf8'),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: kv.lease as unknown as number,
  };
}

/** The lowest physical revision an op reads: a watch from it reveals etcd's compact revision. */
function lowestRevision(op: HOp, f: Frame): number {
  const revs: number[] = [];
  if (op.t === 'range' && op.req.revision) revs.push(op.req.revision);
  // compact(c) fails when c ≤ etcd's compact revision, so the watch must start one below c.
  if (op.t === 'compact') revs.push(op.revision - 1);
  if (op.t === 'txn') {
    for (const o of [...op.req.success, ...(op.req.failure ?? [])]) if ('range' in o && o.range.revision) revs.push(o.range.revision);
  }
  return revs.length > 0 ? f.rev(Math.min(...revs)) : 1;
}
