import { Writable } from 'node:stream';
import pg from 'pg';
import { createLogger, type Logger } from '../../server/log.js';
import { WaitTimeout } from './wait.js';

/**
 * What a pod was doing when a wait on it timed out, for the failure message: a wait that
 * says only "placed 0 after 20 s" cannot tell a step that never ran from one that failed
 * and sits on graphile-worker's backoff, or from one stuck on a lock.
 */

/**
 * A pod logger that keeps its newest `keep` lines in memory (debug and up), less the
 * answered requests (an agent's polls would push every step's line out).
 */
export function recentLog(keep = 300): { log: Logger; lines(): string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const line = chunk.toString('utf8').trimEnd();
      const answered = /"component":"http"/.test(line) && /"status":[23]\d\d/.test(line);
      if (!answered) lines.push(line);
      if (lines.length > keep) lines.shift();
      done();
    },
  });
  return { log: createLogger({ level: 'debug', format: 'json' }, { pod: 'test' }, sink), lines: () => [...lines] };
}

/** graphile-worker's jobs and the database's sessions, as text; never throws (it is evidence). */
export async function postgresEvidence(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url, application_name: 'test-evidence' });
  const out: string[] = [];
  try {
    await c.connect();
    const ask = async (title: string, sql: string) => {
      try {
        const r = await c.query(sql);
        out.push(`${title} (${r.rowCount}):`, ...r.rows.map((row) => `  ${JSON.stringify(row)}`));
      } catch (e) {
        out.push(`${title}: ${String(e)}`);
      }
    };
    await ask(
      'graphile-worker jobs',
      `SELECT j.id, t.identifier AS task, j.payload, round(extract(epoch FROM j.run_at - now())::numeric, 1) AS run_in_s,
              j.attempts, j.locked_at IS NOT NULL AS locked, j.key, left(j.last_error, 300) AS last_error
         FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
        ORDER BY j.run_at LIMIT 50`,
    );
    await ask(
      'sessions',
      `SELECT application_name AS app, state, wait_event_type, wait_event,
              round(extract(epoch FROM now() - xact_start)::numeric, 1) AS xact_s, left(query, 160) AS query
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    await ask('locks not granted', `SELECT locktype, mode, pid, objid FROM pg_locks WHERE NOT granted`);
  } catch (e) {
    out.push(`no evidence from the database: ${String(e)}`);
  } finally {
    await c.end().catch(() => undefined);
  }
  return out.join('\n');
}

/** The wait, and if it times out, the same timeout with the evidence appended to its message. */
export async function withEvidence<T>(wait: Promise<T>, evidence: () => Promise<string>): Promise<T> {
  try {
    return await wait;
  } catch (e) {
    if (e instanceof WaitTimeout) e.message += `\n--- evidence ---\n${await evidence()}`;
    throw e;
  }
}
