import pg from 'pg';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { PostgresStore } from '../../db/postgres/store.js';
import { createTestDatabase } from '../support/databases.js';

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

/** Count the statements pg clients send, by prepared-statement name or text. */
const sent: string[] = [];
const original = pg.Client.prototype.query;
function countStatements(): void {
  // Patched on the prototype: the store's pool makes its own clients.
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const a = args[0] as string | { name?: string; text?: string };
    sent.push(typeof a === 'string' ? a : (a.name ?? a.text ?? '?'));
    return (original as (...x: unknown[]) => unknown).apply(this, args);
  } as typeof original;
}
afterEach(() => {
  pg.Client.prototype.query = original;
  sent.length = 0;
});

async function freshUrl(label: string): Promise<string> {
  const db = await createTestDatabase(label);
  dbs.push(db);
  return db.url;
}

describe('the Postgres write path', () => {
  test('a put of a key the batcher has read or written is one statement: lock, head check, write, commit', async () => {
    const store = await PostgresStore.open(await freshUrl('onert'), { leaseReaperMs: 0, watchPollMs: 60_000 });
    try {
      await store.put('k', 'v0'); // learns k
      countStatements();
      for (let i = 1; i <= 20; i++) await store.put('k', `v${i}`);
      const writes = sent.filter((s) => s === 'cca_write_changes_at_head').length;
      expect({ writes, others: sent.filter((s) => s !== 'cca_write_changes_at_head') }).toEqual({ writes: 20, others: [] });
      expect((await store.get('k'))?.value).toBe('v20');
      expect((await store.get('k'))?.version).toBe(21);
    } finally {
      await store.close();
    }
  });

  test('a put that changes nothing is answered from the store, not from what the batcher remembers', async () => {
    const url = await freshUrl('noop');
    const a = await PostgresStore.open(url, { leaseReaperMs: 0 });
    const b = await PostgresStore.open(url, { leaseReaperMs: 0 });
    try {
      await a.put('k', 'x');
      await b.put('k', 'y'); // a does not know
      const r = await a.put('k', 'x'); // a remembers x: a no-op there, a write in truth
      expect(r.revision).toBe(4);
      expect((await b.get('k'))?.value).toBe('x');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('the observer is told which way each batch committed: from a snapshot, or under the lock (a lease; a plan another writer overtook)', async () => {
    const url = await freshUrl('ways');
    const ways: string[] = [];
    const a = await PostgresStore.open(url, { leaseReaperMs: 0, observer: { committed: (i) => void ways.push(i.way) } });
    const b = await PostgresStore.open(url, { leaseReaperMs: 0 });
    try {
      await a.put('k', 'v1'); // from a snapshot; a remembers k at this head
      await b.put('k', 'v2'); // so a's memory of k is stale
      await a.put('k', 'v3'); // planned from memory, overtaken at the commit: locked
      await a.put('x', '1'); // the batch after an overtaken one: locked
      const { id } = await a.grantLease(60);
      await a.put('l', 'v', { lease: id }); // attaches a lease: locked
      await a.put('y', '1'); // from a snapshot again
      expect(ways).toEqual(['snapshot', 'locked', 'locked', 'locked', 'snapshot']);
      expect((await b.get('k'))?.value).toBe('v3');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('two stores racing compare-and-swap increments: none lost, revisions gap-free', async () => {
    const url = await freshUrl('race');
    const stores = [await PostgresStore.open(url, { leaseReaperMs: 0 }), await PostgresStore.open(url, { leaseReaperMs: 0 })];
    try {
      await stores[0]!.put('n', '0');
      const per = 40;
      let conflicts = 0;
      // Two workers per store: the batcher batches them, and each store remembers what it wrote.
      await Promise.all(
        stores.flatMap((s) =>
          [0, 1].map(async () => {
            for (let done = 0; done < per; ) {
              const kv = (await s.get('n'))!;
              const r = await s.txn({
                compare: [{ key: 'n', target: 'modRevision', op: '=', value: kv.modRevision }],
                success: [{ put: { key: 'n', value: String(Number(kv.value) + 1) } }],
              });
              if (r.succeeded) done++;
              else conflicts++;
            }
          }),
        ),
      );
      const final = (await stores[0]!.get('n'))!;
      expect(final.value).toBe(String(4 * per));
      expect(conflicts).toBeGreaterThan(0); // the race happened
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const log = (await c.query<{ revision: string }>('SELECT DISTINCT revision FROM cca_log ORDER BY revision')).rows.map((x) => Number(x.revision));
        expect(log).toEqual(Array.from({ length: 4 * per + 1 }, (_, i) => i + 2));
        expect((await c.query<{ revision: string }>('SELECT revision FROM cca_meta')).rows[0]!.revision).toBe(String(4 * per + 2));
      } finally {
        await c.end();
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
