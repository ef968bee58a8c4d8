import { chmodSync, closeSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { CcaError, isCcaError, messageOf } from '../../core/diagnostics/index.js';
import { checkCompactRevision, checkLeaseIds, checkCompactTarget, checkLeaseTtl, checkRangeOptions, intervalOf, limits, shapeRange, type KeyInterval } from '../keyspace.js';
import type {
  KeyValue,
  RangeRequest,
  RangeResponse,
  Store,
  TxnRequest,
  TxnResponse,
  WatchBatch,
  WatchEvent,
  WatchRequest,
  LeaseTtl,
} from '../store.js';
import { evaluateTxn, readAt, validateTxn, type TxnView } from '../txn-eval.js';
import { StoreShortcuts } from '../store-shortcuts.js';
import { HeadWaiters } from '../waiters.js';
import { followWatch, type WatchSource } from '../watch-feed.js';

/** Create `path` 0600 if missing, or take group and other bits off an existing one. */
function ownerOnly(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
  chmodSync(path, 0o600);
}
import { prepareSqliteSchema } from './schema-check.js';

export interface SqliteStoreOptions {
  /** Milliseconds; leases expire on this clock (tests inject one). */
  now?: () => number;
  /** Reap expired leases on a timer as well as before every operation; 0 = off. Default 250 ms (0 when `now` is injected). */
  expiryTimerMs?: number;
  /** How often to look for commits by another process on the same file (≤ 1 s). Default 250 ms. */
  pollMs?: number;
  /** How long a writer waits for another process's write transaction. Default 5 s. */
  busyTimeoutMs?: number;
  /** false: create no schema, refuse a file without it (CCA-E0151); default true. */
  migrate?: boolean;
}

/** Revisions per watch read: a late watcher catches up in pages. */
const WATCH_PAGE = 1_000;

interface KvRow {
  key: Buffer;
  value: string;
  create_rev: number;
  mod_rev: number;
  version: number;
  lease: number;
}
interface LogRow extends KvRow {
  revision: number;
  deleted: number;
  prev: string | null;
}
interface Meta {
  revision: number;
  compact_revision: number;
  next_lease: number;
}

const toKv = (r: KvRow): KeyValue => ({
  key: r.key.toString('utf8'),
  value: r.value,
  createRevision: r.create_rev,
  modRevision: r.mod_rev,
  version: r.version,
  lease: r.lease,
});
const b = (key: string) => Buffer.from(key, 'utf8');

/** Stores open in this process, by file: a commit wakes the others' watchers at once. */
const siblings = new Map<string, Set<SqliteStore>>();

/**
 * The Store on one SQLite file (better-sqlite3, synchronous): for one machine without
 * Postgres. WAL mode; every write is one `BEGIN IMMEDIATE` transaction — SQLite's single
 * writer lock serialises writers of every process on the file, and the revision is read
 * and bumped inside it, so revisions are gap-free and in commit order. Transactions are
 * evaluated with the shared evaluator (`db/txn-eval.ts`) over a view that reads the
 * tables inside that transaction.
 */
export class SqliteStore extends StoreShortcuts implements Store {
  readonly path: string;
  /** This open created the schema (an empty file). */
  readonly created: boolean;
  private readonly db: Database.Database;
  private readonly now: () => number;
  /** The newest revision this process has seen committed. */
  private head = 1;
  private readonly waiters = new HeadWaiters();
  private isClosed = false;
  private timers: ReturnType<typeof setInterval>[] = [];
  private driverLock: Database.Database | undefined;
  private readonly st: ReturnType<SqliteStore['prepare']>;

  static async open(url: string, opts: SqliteStoreOptions = {}): Promise<SqliteStore> {
    return new SqliteStore(sqlitePath(url), opts);
  }

  constructor(path: string, opts: SqliteStoreOptions = {}) {
    super();
    this.path = path;
    this.now = opts.now ?? (() => Date.now());
    try {
      // Owner-only: the file holds every key (sealed secrets, token hashes). SQLite gives its
      // -wal and -shm files the database file's mode.
      if (path !== ':memory:') ownerOnly(path);
      this.db = new Database(path === ':memory:' ? ':memory:' : path, { timeout: opts.busyTimeoutMs ?? 5_000 });
      if (path !== ':memory:') this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('foreign_keys = OFF');
      this.created = prepareSqliteSchema(this.db, path, opts.migrate !== false).created;
    } catch (e) {
      if (isCcaError(e)) throw e;
      throw new CcaError('CCA-E0111', { backend: 'sqlite', reason: messageOf(e), target: path });
    }
    this.st = this.prepare();
    this.head = this.st.meta.get()!.revision;
    const every = opts.expiryTimerMs ?? (opts.now ? 0 : 250);
    if (every > 0) this.every(every, () => this.expireLeases());
    if (path !== ':memory:') {
      this.every(Math.min(opts.pollMs ?? 250, 1_000), () => this.poll());
      let set = siblings.get(path);
      if (!set) siblings.set(path, (set = new Set()));
      set.add(this);
    }
  }

  private prepare() {
    const d = this.db;
    const kvCols = 'key, value, create_rev, mod_rev, version, lease';
    return {
      meta: d.prepare<Meta>('SELECT revision, compact_revision, next_lease FROM cca_meta WHERE id = 1'),
      setRev: d.prepare('UPDATE cca_meta SET revision = ? WHERE id = 1'),
      setCompact: d.prepare('UPDATE cca_meta SET compact_revision = ? WHERE id = 1'),
      bumpLease: d.prepare('UPDATE cca_meta SET next_lease = next_lease + 1 WHERE id = 1'),
      get: d.prepare<KvRow>(`SELECT ${kvCols} FROM cca_kv WHERE key = ?`),
      rangeFrom: d.prepare<KvRow>(`SELECT ${kvCols} FROM cca_kv WHERE key >= ? ORDER BY key`),
      rangeFromTo: d.prepare<KvRow>(`SELECT ${kvCols} FROM cca_kv WHERE key >= ? AND key < ? ORDER BY key`),
      // SQLite's bare columns take their values from the row holding max(revision).
      atKey: d.prepare<LogRow>(
        `SELECT ${kvCols}, deleted, max(revision) AS revision FROM cca_log WHERE key = ? AND revision <= ? GROUP BY key`,
      ),
      atFrom: d.prepare<LogRow>(
        `SELECT ${kvCols}, deleted, max(revision) AS revision FROM cca_log WHERE key >= ? AND revision <= ? GROUP BY key ORDER BY key`,
      ),
      atFromTo: d.prepare<LogRow>(
        `SELECT ${kvCols}, deleted, max(revision) AS revision FROM cca_log WHERE key >= ? AND key < ? AND revision <= ? GROUP BY key ORDER BY key`,
      ),
      upsert: d.prepare(
        `INSERT INTO cca_kv (${kvCols}) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, create_rev = excluded.create_rev,
           mod_rev = excluded.mod_rev, version = excluded.version, lease = excluded.lease`,
      ),
      del: d.prepare('DELETE FROM cca_kv WHERE key = ?'),
      log: d.prepare(
        `INSERT INTO cca_log (revision, seq, ${kvCols}, deleted, prev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      logRange: d.prepare<LogRow>(
        `SELECT revision, ${kvCols}, deleted, prev FROM cca_log WHERE revision >= ? AND revision <= ? ORDER BY revision, seq`,
      ),
      leaseGet: d.prepare<{ id: number; ttl: number; expires_at: number }>('SELECT id, ttl, expires_at FROM cca_lease WHERE id = ?'),
      leaseIns: d.prepare('INSERT INTO cca_lease (id, ttl, expires_at) VALUES (?, ?, ?)'),
      leaseDel: d.prepare('DELETE FROM cca_lease WHERE id = ?'),
      leaseRenew: d.prepare('UPDATE cca_lease SET expires_at = ? WHERE id = ?'),
      leaseAll: d.prepare<{ id: number }>('SELECT id FROM cca_lease ORDER BY id'),
      leaseDue: d.prepare<{ id: number }>('SELECT id FROM cca_lease WHERE expires_at <= ? ORDER BY id'),
      leaseAnyDue: d.prepare<{ id: number }>('SELECT id FROM cca_lease WHERE expires_at <= ? LIMIT 1'),
      leaseKeys: d.prepare<{ key: Buffer }>('SELECT key FROM cca_kv WHERE lease = ? ORDER BY key'),
      compactLog: d.prepare(
        `DELETE FROM cca_log WHERE revision < @r AND (deleted = 1 OR revision <
           (SELECT max(l2.revision) FROM cca_log l2 WHERE l2.key = cca_log.key AND l2.revision < @r))`,
      ),
    };
  }

  async revision(): Promise<number> {
    return this.read(() => this.st.meta.get()!.revision);
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    this.enter();
    const iv = intervalOf(req);
    checkRangeOptions(req);
    return this.read(() => {
      const meta = this.st.meta.get()!;
      return { ...shapeRange(readAt(this.view(meta), iv, req.revision ?? 0), req), revision: meta.revision };
    });
  }

  /** One deferred read transaction (one snapshot), not a txn: a txn takes the writer's lock. */
  override async getMany(keys: readonly string[]): Promise<(KeyValue | null)[]> {
    this.enter();
    if (keys.length > limits.maxTxnOps) throw new CcaError('CCA-E0109', { ops: keys.length, max: limits.maxTxnOps, branch: 'getMany' });
    const ivs = keys.map((key) => intervalOf({ key }));
    if (keys.length === 0) return [];
    return this.read(() => {
      const view = this.view(this.st.meta.get()!);
      return ivs.map((iv) => view.range(iv)[0] ?? null);
    });
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    this.enter();
    validateTxn(req);
    return this.write(() => {
      const meta = this.st.meta.get()!;
      const out = evaluateTxn(this.view(meta), req);
      const revision = out.events.length > 0 ? this.apply(meta.revision + 1, out.events) : meta.revision;
      return { succeeded: out.succeeded, revision, responses: out.responses };
    });
  }

  watch(req: WatchRequest): AsyncIterable<WatchBatch> {
    this.enter();
    return followWatch(this.source, req);
  }

  async grantLease(ttlSeconds: number): Promise<{ id: number; ttl: number }> {
    this.enter();
    checkLeaseTtl(ttlSeconds);
    return this.write(() => {
      const id = this.st.meta.get()!.next_lease;
      this.st.bumpLease.run();
      this.st.leaseIns.run(id, ttlSeconds, this.now() + ttlSeconds * 1000);
      return { id, ttl: ttlSeconds };
    });
  }

  async keepAlive(id: number): Promise<{ ttl: number }> {
    this.enter();
    return this.write(() => {
      const lease = this.st.leaseGet.get(id);
      if (!lease || lease.expires_at <= this.now()) throw new CcaError('CCA-E0107', { lease: id });
      this.st.leaseRenew.run(this.now() + lease.ttl * 1000, id);
      return { ttl: lease.ttl };
    });
  }

  async revokeLease(id: number): Promise<{ revision: number }> {
    this.enter();
    return this.write(() => {
      if (!this.st.leaseGet.get(id)) throw new CcaError('CCA-E0107', { lease: id });
      return { revision: this.dropLease(id) };
    });
  }

  async leaseTimeToLive(id: number): Promise<{ ttl: number; grantedTtl: number; keys: string[] }> {
    this.enter();
    return this.read(() => {
      const lease = this.st.leaseGet.get(id);
      if (!lease) return { ttl: -1, grantedTtl: 0, keys: [] };
      const remaining = Math.max(0, Math.floor((lease.expires_at - this.now()) / 1000));
      return { ttl: remaining, grantedTtl: lease.ttl, keys: this.st.leaseKeys.all(id).map((r) => r.key.toString('utf8')) };
    });
  }

  async leasesTimeToLive(ids: readonly number[]): Promise<LeaseTtl[]> {
    this.enter();
    checkLeaseIds(ids);
    return this.read(() =>
      ids.map((id) => {
        const lease = this.st.leaseGet.get(id);
        return lease ? { ttl: Math.max(0, Math.floor((lease.expires_at - this.now()) / 1000)), grantedTtl: lease.ttl } : { ttl: -1, grantedTtl: 0 };
      }),
    );
  }

  async leases(): Promise<{ id: number }[]> {
    this.enter();
    return this.read(() => this.st.leaseAll.all().map((r) => ({ id: r.id })));
  }

  async compact(revision: number): Promise<void> {
    this.enter();
    checkCompactRevision(revision);
    this.write(() => {
      const meta = this.st.meta.get()!;
      checkCompactTarget(revision, meta.revision, meta.compact_revision);
      this.st.setCompact.run(revision);
      // Keep everything at or after R, and the newest live version before R (MemoryStore's rule).
      this.st.compactLog.run({ r: revision });
    });
  }

  /**
   * Claim the right to run the in-process controller driver on this file: an exclusive
   * lock on `<file>-driver`, held until release() or the process ends (the OS drops it,
   * so a killed pod never leaves a stale claim). A second claimant gets CCA-E0125.
   */
  claimDriver(): { release(): void } {
    if (this.path === ':memory:') return { release: () => undefined };
    if (this.driverLock) return { release: () => this.releaseDriver() };
    const lockPath = `${this.path}-driver`;
    ownerOnly(lockPath);
    const lock = new Database(lockPath, { timeout: 0 });
    try {
      lock.pragma('journal_mode = DELETE');
      lock.exec('CREATE TABLE IF NOT EXISTS cca_driver (id INTEGER PRIMARY KEY, pid INTEGER, since INTEGER)');
      lock.exec('BEGIN EXCLUSIVE');
      lock.prepare('INSERT OR REPLACE INTO cca_driver (id, pid, since) VALUES (1, ?, ?)').run(process.pid, Date.now());
    } catch (e) {
      lock.close();
      const code = (e as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        throw new CcaError('CCA-E0125', { file: this.path });
      }
      throw new CcaError('CCA-E0111', { backend: 'sqlite', reason: messageOf(e), target: lockPath });
    }
    this.driverLock = lock;
    return { release: () => this.releaseDriver() };
  }

  private releaseDriver(): void {
    const lock = this.driverLock;
    this.driverLock = undefined;
    if (!lock) return;
    try {
      lock.exec('ROLLBACK');
    } catch {
      // already gone
    }
    lock.close();
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const t of this.timers) clearInterval(t);
    siblings.get(this.path)?.delete(this);
    this.releaseDriver();
    this.waiters.wake();
    this.db.close();
  }

  /** Expire every lease whose time is up; each deletes its keys in one revision. Returns how many. */
  expireLeases(): number {
    if (this.isClosed) return 0;
    const t = this.now();
    if (!this.guard(() => this.st.leaseAnyDue.get(t))) return 0;
    return this.write(() => {
      const due = this.st.leaseDue.all(this.now());
      for (const { id } of due) this.dropLease(id);
      return due.length;
    });
  }

  /** Inside a write transaction: drop the lease and delete its keys in one revision. */
  private dropLease(id: number): number {
    this.st.leaseDel.run(id);
    const keys = this.st.leaseKeys.all(id).map((r) => r.key.toString('utf8'));
    const meta = this.st.meta.get()!;
    if (keys.length === 0) return meta.revision;
    const out = evaluateTxn(this.view(meta), { compare: [], success: keys.map((key) => ({ delete: { key } })) });
    return this.apply(meta.revision + 1, out.events);
  }

  /** Inside a write transaction: record one revision's events. */
  private apply(revision: number, events: WatchEvent[]): number {
    let seq = 0;
    for (const e of events) {
      const { kv } = e;
      const key = b(kv.key);
      const deleted = e.type === 'delete' ? 1 : 0;
      this.st.log.run(revision, seq++, key, kv.value, kv.createRevision, kv.modRevision, kv.version, kv.lease, deleted,
        e.prevKv ? JSON.stringify(e.prevKv) : null);
      if (deleted) this.st.del.run(key);
      else this.st.upsert.run(key, kv.value, kv.createRevision, kv.modRevision, kv.version, kv.lease);
    }
    this.st.setRev.run(revision);
    return revision;
  }

  private view(meta: Meta): TxnView {
    const st = this.st;
    return {
      revision: meta.revision,
      compactRevision: meta.compact_revision,
      get: (key) => {
        const r = st.get.get(b(key));
        return r ? toKv(r) : undefined;
      },
      range: (iv) => {
        if (iv.single) {
          const r = st.get.get(b(iv.start));
          return r ? [toKv(r)] : [];
        }
        const rows = iv.end === undefined ? st.rangeFrom.all(b(iv.start)) : st.rangeFromTo.all(b(iv.start), b(iv.end));
        return rows.map(toKv);
      },
      rangeAt: (iv, at) => {
        const rows = iv.single
          ? st.atKey.all(b(iv.start), at)
          : iv.end === undefined
            ? st.atFrom.all(b(iv.start), at)
            : st.atFromTo.all(b(iv.start), b(iv.end), at);
        return rows.filter((r) => r.deleted === 0).map(toKv);
      },
      leaseExists: (id) => st.leaseGet.get(id) !== undefined,
    };
  }

  private readonly source: WatchSource = {
    closed: () => this.isClosed,
    head: () => this.head,
    read: async (from: number, _iv: KeyInterval) => {
      if (this.isClosed) return { batches: [], through: from - 1 };
      return this.read(() => {
        const meta = this.st.meta.get()!;
        if (from < meta.compact_revision) {
          throw new CcaError('CCA-E0101', { revision: from, compactRevision: meta.compact_revision });
        }
        this.advance(meta.revision);
        const through = Math.min(meta.revision, from + WATCH_PAGE - 1);
        const batches: WatchBatch[] = [];
        let cur: WatchBatch | undefined;
        for (const r of this.st.logRange.all(from, through)) {
          if (!cur || cur.revision !== r.revision) batches.push((cur = { revision: r.revision, events: [] }));
          const kv = toKv(r);
          const prev = r.prev ? (JSON.parse(r.prev) as KeyValue) : undefined;
          const type = r.deleted ? 'delete' : 'put';
          cur.events.push(prev ? { type, kv, prevKv: prev } : { type, kv });
        }
        for (let i = 0; i < batches.length; i++) {
          const want = (batches[0]?.revision ?? from) + i;
          if (batches[i]!.revision !== want) throw new CcaError('CCA-E0115', { from, to: through, missing: want });
        }
        return { batches, through };
      });
    },
    waitBeyond: (rev, signal) => this.waiters.wait(() => this.head > rev || this.isClosed, signal),
  };

  private poll(): void {
    if (this.isClosed) return;
    try {
      this.advance(this.st.meta.get()!.revision);
    } catch {
      // busy or briefly unreadable: the next poll tries again
    }
  }

  private advance(revision: number): void {
    if (revision <= this.head) return;
    this.head = revision;
    this.waiters.wake();
  }

  private every(ms: number, f: () => void): void {
    const t = setInterval(() => {
      try {
        f();
      } catch {
        // the next tick tries again; an operation reports the error itself
      }
    }, ms);
    t.unref?.();
    this.timers.push(t);
  }

  private enter(): void {
    if (this.isClosed) throw new CcaError('CCA-E0113');
    this.expireLeases();
  }

  private read<T>(f: () => T): T {
    if (this.isClosed) throw new CcaError('CCA-E0113');
    return this.guard(() => this.db.transaction(f).deferred());
  }

  /** One `BEGIN IMMEDIATE` transaction: the single writer across every process on the file. */
  private write<T>(f: () => T): T {
    if (this.isClosed) throw new CcaError('CCA-E0113');
    const before = this.head;
    const out = this.guard(() => this.db.transaction(f).immediate());
    const rev = this.guard(() => this.st.meta.get()!.revision);
    if (rev > before) {
      this.advance(rev);
      for (const s of siblings.get(this.path) ?? []) if (s !== this) s.poll();
    }
    return out;
  }

  private guard<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      if (isCcaError(e)) throw e;
      const code = (e as { code?: string }).code ?? '';
      const reason = messageOf(e);
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL') {
        throw new CcaError('CCA-E0111', { backend: 'sqlite', reason, target: this.path });
      }
      throw new CcaError('CCA-E0118', { backend: 'sqlite', reason });
    }
  }
}

/** `sqlite:./file.db`, `sqlite:/abs/file.db`, `sqlite:///abs/file.db`, `sqlite::memory:`. */
export function sqlitePath(url: string): string {
  let rest = url.replace(/^sqlite:/i, '');
  if (rest.startsWith('//')) rest = rest.slice(2);
  if (rest === '' || rest === ':memory:') return ':memory:';
  return decodeURIComponent(rest);
}
