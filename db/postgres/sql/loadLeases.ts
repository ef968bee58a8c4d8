import type { Db } from './db.js';

/** Which of these leases are alive, and which are past their expiry, by the database's clock. */
export async function loadLeases(db: Db, ids: number[]): Promise<{ id: number; expired: boolean }[]> {
  if (ids.length === 0) return [];
  const r = await db.query<{ id: number; expired: boolean }>(
    `SELECT id, expires_at <= clock_timestamp() AS expired FROM cca_lease WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return r.rows;
}
