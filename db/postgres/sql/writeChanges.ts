import type { KeyValue } from '../../store.js';
import type { Db } from './db.js';
import { binaryTextArray, booleanArrayLiteral, integerArrayLiteral } from './text-array.js';

export interface LogRow {
  revision: number;
  seq: number;
  key: string;
  value: string;
  deleted: boolean;
  createRevision: number;
  version: number;
  lease: number;
  prevRevision: number;
}

/** The row a put's log row leaves for its key. */
export function keyValueOf(r: LogRow): KeyValue {
  return { key: r.key, value: r.value, createRevision: r.createRevision, modRevision: r.revision, version: r.version, lease: r.lease };
}

/**
 * SQL a commit hook adds to the write statement (writeChangesAtHead):
 * `ctes`, common table expressions that run after the counter lock is taken, with
 * `:applied` where they must do nothing unless the batch applies; `done`, a boolean
 * expression over them that is true when they did all they must (else the statement fails
 * and nothing commits). Their parameters are `$1…` of `values`. `name`: the prepared
 * statement's (one per distinct text).
 */
export interface HookStatement {
  name: string;
  ctes: string;
  done: string;
  values: unknown[];
}

/** The head a batch was planned at: its changes apply only if the store is still there. */
export interface HeadGuard {
  revision: number;
  compactRevision: number;
}

const EVENTS = `SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::bool[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
         AS e(revision, seq, key, value, deleted, create_revision, version, lease, prev_revision)`;

const APPLY = `ins AS (INSERT INTO cca_log SELECT * FROM ev),
     fin AS (SELECT DISTINCT ON (key) * FROM ev ORDER BY key, revision DESC, seq DESC),
     up AS (
       INSERT INTO cca_kv (key, value, create_revision, mod_revision, version, lease)
       SELECT key, value, create_revision, revision, version, lease FROM fin WHERE NOT deleted
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, create_revision = excluded.create_revision,
         mod_revision = excluded.mod_revision, version = excluded.version, lease = excluded.lease
     ),
     del AS (DELETE FROM cca_kv k USING fin WHERE fin.deleted AND k.key = fin.key)`;

/**
 * Everything a batch changes, in one statement: append the log, bring cca_kv to each
 * key's final state, drop revoked or expired leases, move the counter, and notify
 * watchers once (pg_notify serialises notifying commits, so once per batch, not per write).
 * Runs under the counter lock its transaction took first (batch-apply.ts lockHead).
 */
export async function writeChanges(db: Db, rows: LogRow[], droppedLeases: number[], revision: number): Promise<void> {
  await db.query({
    name: 'cca_write_changes',
    text: `WITH ev AS (${EVENTS}),
     ${APPLY},
     dl AS (DELETE FROM cca_lease WHERE id = ANY($10::bigint[])),
     m AS (UPDATE cca_meta SET revision = $11 WHERE id = 1 AND revision < $11)
     SELECT pg_notify('cca_revision', $11::text) WHERE cardinality($1::bigint[]) > 0`,
    values: [...columns(rows), droppedLeases, revision],
  });
}

/**
 * The same changes as one self-contained statement, for a batch planned from a snapshot
 * taken without the lock (batch-apply.ts planAtSnapshot): its first act takes the counter
 * row's lock and moves it only if the head and the compact revision are still the ones
 * the batch was planned at; every other change depends on that, so a batch overtaken by
 * another writer changes nothing and answers false. Sent outside BEGIN it is its own
 * transaction: one round trip and one fsync.
 */
export async function writeChangesAtHead(db: Db, rows: LogRow[], revision: number, guard: HeadGuard, hook?: HookStatement): Promise<boolean> {
  const own = [...columns(rows), revision, guard.revision, guard.compactRevision];
  const r = await db.query<{ applied: boolean; hook_failed?: number | null }>({
    name: hook ? `cca_write_changes_at_head_${hook.name}` : 'cca_write_changes_at_head',
    text: `WITH m AS (
       UPDATE cca_meta SET revision = $10 WHERE id = 1 AND revision = $11 AND compact_revision = $12 RETURNING 1
     ),
     ev AS (${EVENTS} WHERE EXISTS (SELECT 1 FROM m)),
     ${APPLY}${hook ? `,
     ${shiftParams(hook.ctes, own.length).replaceAll(':applied', 'EXISTS (SELECT 1 FROM m)')}` : ''}
     SELECT EXISTS (SELECT 1 FROM m) AS applied,
            CASE WHEN EXISTS (SELECT 1 FROM m) THEN pg_notify('cca_revision', $10::text) END AS notified${
              // A hook that did not do all it must fails the statement (nothing commits): the
              // cast of a text a sub-select makes, so the planner cannot fold it ahead of time.
              hook ? `,
            CASE WHEN EXISTS (SELECT 1 FROM m) AND NOT (${shiftParams(hook.done, own.length)})
              THEN (SELECT 'commit hook incomplete: nothing of revision ' || $10::text || ' was committed' FROM m)::int END AS hook_failed` : ''
            }`,
    values: hook ? [...own, ...hook.values] : own,
  });
  return r.rows[0]!.applied;
}

/** `$n` → `$(n + by)`: a hook's parameters after the statement's own. */
function shiftParams(sql: string, by: number): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);
}

function columns(rows: LogRow[]): unknown[] {
  const col = <K extends keyof LogRow>(k: K) => rows.map((r) => r[k]);
  // Array literals built here: pg would quote and regex-escape every element; keys and
  // values go in binary, copied by the server rather than parsed (text-array.ts).
  return [
    integerArrayLiteral(col('revision')),
    integerArrayLiteral(col('seq')),
    binaryTextArray(col('key')),
    binaryTextArray(col('value')),
    booleanArrayLiteral(col('deleted')),
    integerArrayLiteral(col('createRevision')),
    integerArrayLiteral(col('version')),
    integerArrayLiteral(col('lease')),
    integerArrayLiteral(col('prevRevision')),
  ];
}
