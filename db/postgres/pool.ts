import pg from 'pg';
import { checkPostgresUrl } from './url.js';

const INT8_OID = 20;

/** Revisions and lease ids fit in 2^53 for centuries of writes; read them as numbers. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

/** The URL's own application_name (e.g. one per pod, for pg_stat_activity) or "ccattler". */
function applicationName(url: string): string {
  try {
    return new URL(url).searchParams.get('application_name') ?? 'ccattler';
  } catch {
    return 'ccattler';
  }
}

export function createPool(url: string, max = 10): pg.Pool {
  checkPostgresUrl(url);
  const pool = new pg.Pool({ connectionString: url, max, types, application_name: applicationName(url) });
  // An idle client that loses its connection must not crash the process; the next
  // query on the pool gets a fresh connection.
  pool.on('error', () => undefined);
  // A checked-out client whose connection dies between queries emits 'error'; the next
  // query on it fails and is classified by whoever runs it.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export function createClient(url: string): pg.Client {
  return new pg.Client({ connectionString: url, types, application_name: 'ccattler-listen' });
}
