/**
 * The SQLite schema. Keys are BLOBs holding the key's UTF-8 bytes: SQLite compares
 * BLOBs with memcmp, which is exactly etcd's byte order (a TEXT column would need a
 * collation, and JS string order is UTF-16 order, which differs above U+FFFF).
 */
export const schemaVersion = 1;

export const schemaSql = `
CREATE TABLE IF NOT EXISTS cca_meta (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  revision         INTEGER NOT NULL,
  compact_revision INTEGER NOT NULL,
  next_lease       INTEGER NOT NULL,
  schema_version   INTEGER NOT NULL
);
INSERT OR IGNORE INTO cca_meta (id, revision, compact_revision, next_lease, schema_version) VALUES (1, 1, 0, 1, ${schemaVersion});

-- One row per live key.
CREATE TABLE IF NOT EXISTS cca_kv (
  key        BLOB PRIMARY KEY,
  value      TEXT NOT NULL,
  create_rev INTEGER NOT NULL,
  mod_rev    INTEGER NOT NULL,
  version    INTEGER NOT NULL,
  lease      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cca_kv_lease ON cca_kv (lease) WHERE lease <> 0;

-- One row per key changed per revision; prev is the replaced KeyValue as JSON (for prevKv).
CREATE TABLE IF NOT EXISTS cca_log (
  revision   INTEGER NOT NULL,
  seq        INTEGER NOT NULL,
  key        BLOB NOT NULL,
  deleted    INTEGER NOT NULL,
  value      TEXT NOT NULL,
  create_rev INTEGER NOT NULL,
  mod_rev    INTEGER NOT NULL,
  version    INTEGER NOT NULL,
  lease      INTEGER NOT NULL,
  prev       TEXT,
  PRIMARY KEY (revision, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS cca_log_key_revision ON cca_log (key, revision);

CREATE TABLE IF NOT EXISTS cca_lease (
  id         INTEGER PRIMARY KEY,
  ttl        INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cca_lease_expires ON cca_lease (expires_at);
`;
