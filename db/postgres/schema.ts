import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, check, customType, index, integer, pgTable, primaryKey, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/**
 * Keys sort by their UTF-8 bytes, as etcd's do, whatever the database's default
 * collation is: "C" collation compares bytes, and btree range scans follow it.
 */
const keyText = customType<{ data: string }>({
  dataType: () => 'text COLLATE "C"',
});

const int8 = (name: string) => bigint(name, { mode: 'number' });

/** One row: the current revision and the compact revision. Every writer locks it first. */
export const meta = pgTable(
  'cca_meta',
  {
    id: smallint('id').primaryKey(),
    revision: int8('revision').notNull(),
    compactRevision: int8('compact_revision').notNull(),
  },
  (t) => [check('cca_meta_one_row', sql`${t.id} = 1`)],
);

/** The current state: one row per live key. Serves gets and current ranges. */
export const kv = pgTable(
  'cca_kv',
  {
    key: keyText('key').primaryKey(),
    value: text('value').notNull(),
    createRevision: int8('create_revision').notNull(),
    modRevision: int8('mod_revision').notNull(),
    version: int8('version').notNull(),
    lease: int8('lease').notNull(),
  },
  (t) => [index('cca_kv_lease').on(t.lease).where(sql`${t.lease} <> 0`)],
);

/**
 * The history: one row per key changed per revision, in op order (`seq`). Serves
 * reads at past revisions, watches, and prevKv (via `prev_revision`).
 */
export const log = pgTable(
  'cca_log',
  {
    revision: int8('revision').notNull(),
    seq: integer('seq').notNull(),
    key: keyText('key').notNull(),
    /** Empty for a delete. */
    value: text('value').notNull(),
    deleted: boolean('deleted').notNull(),
    createRevision: int8('create_revision').notNull(),
    version: int8('version').notNull(),
    lease: int8('lease').notNull(),
    /** mod revision of the version this row replaced or deleted; 0 = none. */
    prevRevision: int8('prev_revision').notNull(),
  },
  (t) => [primaryKey({ columns: [t.revision, t.seq] }), uniqueIndex('cca_log_key_revision').on(t.key, t.revision)],
);

export const lease = pgTable(
  'cca_lease',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    ttl: int8('ttl').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [index('cca_lease_expires_at').on(t.expiresAt)],
);

/**
 * One row: when leases were last reaped. A long silence means the store (or every pod)
 * was down and nobody could keep leases alive: the next reap renews them all once before
 * expiring any, as etcd renews leases on a leader change.
 */
export const reaper = pgTable(
  'cca_reaper',
  {
    id: smallint('id').primaryKey(),
    lastReapAt: timestamp('last_reap_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [check('cca_reaper_one_row', sql`${t.id} = 1`)],
);
