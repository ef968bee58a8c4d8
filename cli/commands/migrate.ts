import { processCommand } from '../process-command.js';
import { defineCommand } from '../spec.js';

export const spec = defineCommand({
  usage: ['cca migrate --store URL'],
  description: "Apply the store's schema migrations alone (Postgres: the store's and graphile-worker's; SQLite: the schema; etcd and memory: nothing), so pods can run with --no-migrate and no DDL rights.",
  flags: {},
  raw: true,
  examples: [{ line: 'cca migrate --store postgres://cca_owner@db/cca', says: 'the schema a release needs, before its pods start' }],
});

/** `cca migrate`: apply the schema migrations alone (server/migrate.ts). */
export const run = processCommand('migrate', async () => (await import('../../server/dba-run.js')).runMigrate);
