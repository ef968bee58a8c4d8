import type Database from 'better-sqlite3';
import { CcaError } from '../../core/diagnostics/index.js';
import { schemaSql, schemaVersion } from './schema.js';

/**
 * Bring a SQLite file's schema to this version (`migrate`), or only check it (a pod with
 * --no-migrate): a file without the schema is behind (CCA-E0151), one whose
 * `cca_meta.schema_version` is above this version's is ahead (CCA-E0150). Answers whether
 * this call created the schema.
 */
export function prepareSqliteSchema(db: Database.Database, file: string, migrate: boolean): { created: boolean } {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cca_meta'").get() !== undefined;
  if (has) {
    const row = db.prepare('SELECT schema_version AS v FROM cca_meta WHERE id = 1').get() as { v: number } | undefined;
    if (row && row.v > schemaVersion) throw new CcaError('CCA-E0150', { what: 'SQLite store', target: file, found: `schema version ${row.v}`, known: `schema version ${schemaVersion}` });
  }
  if (!migrate) {
    if (!has) throw new CcaError('CCA-E0151', { what: 'SQLite store', target: file, pending: `schema version ${schemaVersion}` });
    return { created: false };
  }
  db.transaction(() => db.exec(schemaSql)).immediate();
  return { created: !has };
}
