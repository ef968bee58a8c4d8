import type { DiagnosticDef } from '../types.js';

/** CCA-E0150–E0169: what a DBA meets: migrations, pools and poolers, snapshots and copies. */
export const dbaCodes = [
  {
    code: 'CCA-E0150',
    blame: 'environment',
    title: 'database schema newer than this pod',
    cause: 'the {what} schema at {target} has {found}, newer than the newest migration this version of ccattler knows ({known})',
    fix: 'upgrade the pods to the version that migrated this database, or restore the database from a backup taken before that upgrade',
  },
  {
    code: 'CCA-E0151',
    blame: 'environment',
    title: 'database schema behind, migrations disabled',
    cause: 'the {what} schema at {target} is behind this version ({pending} pending) and the pod was started with --no-migrate',
    fix: 'run `cca migrate --store URL` (as a user that may create tables) with this version, then start the pods again',
  },
  {
    code: 'CCA-E0152',
    blame: 'environment',
    title: 'transaction pooling in front of Postgres',
    cause: 'the Postgres at {target} is reached through a pooler in transaction or statement mode: {evidence}',
    fix: 'use session pooling (PgBouncer: pool_mode = session) or connect to Postgres directly; ccattler needs LISTEN/NOTIFY, advisory locks and session settings, which transaction pooling breaks',
  },
  {
    code: 'CCA-E0153',
    blame: 'user',
    title: 'restore target not empty',
    cause: 'the target store {target} already holds {keys} key(s) and {leases} lease(s)',
    fix: 'restore into an empty store (a new database, SQLite file or etcd prefix), or pass --overwrite to write the snapshot\'s keys over what is there',
  },
  {
    code: 'CCA-E0154',
    blame: 'user',
    title: 'not a usable snapshot',
    cause: 'the snapshot {file} is damaged or not a ccattler snapshot: {reason}',
    fix: 'take the snapshot again (`cca store snapshot --store URL FILE`); a file cut short or edited by hand is refused before anything is written',
  },
  {
    code: 'CCA-E0155',
    blame: 'user',
    title: 'snapshot format too new',
    cause: 'the snapshot {file} has format version {found}; this version of cca reads up to {known}',
    fix: 'restore it with the version of cca that wrote it, or a newer one',
  },
  {
    code: 'CCA-E0156',
    blame: 'environment',
    title: 'snapshot file not writable or readable',
    cause: 'the snapshot file {file} could not be {action}: {reason}',
    fix: 'check the path, the free space and the permissions of its folder',
  },
  {
    code: 'CCA-E0157',
    blame: 'user',
    title: 'invalid store command',
    cause: '{reason}',
    fix: 'usage: {usage}',
  },
] as const satisfies readonly DiagnosticDef[];
