import type { Db } from './db.js';

export async function grantLease(db: Db, ttl: number): Promise<number> {
  const r = await db.query<{ id: number }>(
    `INSERT INTO cca_lease (ttl, expires_at) VALUES ($1::bigint, clock_timestamp() + $1::bigint * interval '1 second') RETURNING id`,
    [ttl],
  );
  return r.rows[0]!.id;
}

/** Extends a live lease; a lease past its expiry stays dead even before the reaper deletes it. */
export async function keepAliveLease(db: Db, id: number): Promise<number | null> {
  const r = await db.query<{ ttl: number }>(
    `UPDATE cca_lease SET expires_at = clock_timestamp() + ttl * interval '1 second'
      WHERE id = $1 AND expires_at > clock_timestamp() RETURNING ttl`,
    [id],
  );
  return r.rows[0]?.ttl ?? null;
}

export async function leaseTimeToLive(
  db: Db,
  id: number,
): Promise<{ ttl: number; grantedTtl: number; keys: string[] } | null> {
  const r = await db.query<{ ttl: number; remaining: number; keys: string[] }>(
    `SELECT l.ttl, floor(extract(epoch FROM l.expires_at - clock_timestamp()))::int AS remaining,
            ARRAY(SELECT key FROM cca_kv WHERE lease = l.id ORDER BY key) AS keys
       FROM cca_lease l WHERE l.id = $1 AND l.expires_at > clock_timestamp()`,
    [id],
  );
  const row = r.rows[0];
  return row ? { ttl: Math.max(0, row.remaining), grantedTtl: row.ttl, keys: row.keys } : null;
}

/** Several live leases' TTLs in one statement (no keys), by id; a lease absent or past its expiry is missing. */
export async function leasesTimeToLive(db: Db, ids: readonly number[]): Promise<Map<number, { ttl: number; grantedTtl: number }>> {
  const r = await db.query<{ id: string; ttl: number; remaining: number }>(
    `SELECT id, ttl, floor(extract(epoch FROM expires_at - clock_timestamp()))::int AS remaining
       FROM cca_lease WHERE id = ANY($1::bigint[]) AND expires_at > clock_timestamp()`,
    [ids],
  );
  return new Map(r.rows.map((row) => [Number(row.id), { ttl: Math.max(0, row.remaining), grantedTtl: Number(row.ttl) }]));
}

export async function listLiveLeases(db: Db): Promise<number[]> {
  const r = await db.query<{ id: number }>(`SELECT id FROM cca_lease WHERE expires_at > clock_timestamp() ORDER BY id`);
  return r.rows.map((x) => x.id);
}

export async function listExpiredLeases(db: Db, max: number): Promise<number[]> {
  const r = await db.query<{ id: number }>(
    `SELECT id FROM cca_lease WHERE expires_at <= clock_timestamp() ORDER BY expires_at, id LIMIT $1`,
    [max],
  );
  return r.rows.map((x) => x.id);
}

/**
 * Note this reap; if the previous one was longer than `gapMs` ago, nobody could keep
 * leases alive meanwhile (the store, or every pod, was down), so first renew every lease
 * by its TTL. Returns how many were renewed. A separate row from the revision counter, so
 * reaping never waits on writers.
 */
export async function renewAfterSilence(db: Db, gapMs: number): Promise<number> {
  const r = await db.query<{ renewed: number }>(
    `WITH prev AS (SELECT last_reap_at FROM cca_reaper WHERE id = 1 FOR UPDATE),
          up AS (UPDATE cca_reaper SET last_reap_at = clock_timestamp() WHERE id = 1),
          ext AS (
            UPDATE cca_lease SET expires_at = greatest(expires_at, clock_timestamp() + ttl * interval '1 second')
             WHERE (SELECT last_reap_at FROM prev) < clock_timestamp() - $1::bigint * interval '1 millisecond'
            RETURNING id)
     SELECT count(*)::int AS renewed FROM ext`,
    [gapMs],
  );
  return r.rows[0]?.renewed ?? 0;
}
