import type { Db } from './db.js';

/** The server process serving this session (or, behind a pooler, this statement). */
export async function backendPid(db: Db): Promise<number> {
  return (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}
