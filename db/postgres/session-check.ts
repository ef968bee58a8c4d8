import type pg from 'pg';
import { CcaError } from '../../core/diagnostics/index.js';
import { backendPid } from './sql/backendPid.js';

/**
 * Refuse a pooler in transaction or statement mode (CCA-E0152). ccattler keeps state in
 * the session: LISTEN wakes watchers, advisory locks guard migrations and steps, and
 * every connection carries its timeouts as session settings; a pooler that hands the
 * server connection to another client between transactions breaks all three silently.
 *
 * The check uses what a session guarantees and transaction pooling cannot keep: two
 * clients connected at once never share a backend, and one client's backend never changes.
 * Client A asks its backend's pid; client B, opening a transaction, asks its own (a pooler
 * in transaction mode hands it the server connection A just released, most recently used
 * first); A asks again while B's transaction pins that one. Directly or with session
 * pooling, A's two answers are equal and differ from B's, so this never refuses them.
 */
export async function requireSessionPooling(pool: pg.Pool, target: string, other: pg.Pool = pool): Promise<void> {
  const a = await pool.connect();
  try {
    const b = await other.connect();
    try {
      for (let round = 0; round < 3; round++) {
        const first = await backendPid(a);
        await b.query('BEGIN');
        const other = await backendPid(b);
        const again = await backendPid(a);
        await b.query('ROLLBACK');
        if (first === other) throw new CcaError('CCA-E0152', { target, evidence: `two open connections were served by the same server process (pid ${first}) one after the other` });
        if (first !== again) throw new CcaError('CCA-E0152', { target, evidence: `one connection was served by server process ${first}, then by ${again}` });
      }
    } finally {
      b.release();
    }
  } finally {
    a.release();
  }
}
