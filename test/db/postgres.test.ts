import { afterAll } from 'vitest';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';
import { defineConformance } from './conformance.js';

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

defineConformance({
  name: 'postgres',
  open: async () => {
    const db = await createTestDatabase('conf');
    dbs.push(db);
    return PostgresStore.open(db.url, { leaseReaperMs: 100 });
  },
});
