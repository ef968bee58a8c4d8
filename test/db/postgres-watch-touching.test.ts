import { afterAll, expect, test } from 'vitest';
import { PostgresStore } from '../../db/postgres/store.js';
import type { WatchBatch } from '../../db/store.js';
import { createTestDatabase } from '../support/databases.js';

const dbs: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

/**
 * The agents' long polls watch a prefix of their own node; before, every parked watcher woke
 * at every head move and read the ring (docs/benchmarks.md, Cost item 6).
 */
test('a watcher parked on its prefix sleeps through other keys\' commits and wakes on its own, skipping to it', async () => {
  const db = await createTestDatabase('touching');
  dbs.push(db);
  let reads = 0;
  const store = await PostgresStore.open(db.url, { leaseReaperMs: 0, observer: { watchRead: () => void reads++ } });
  const other = await PostgresStore.open(db.url, { leaseReaperMs: 0 });
  try {
    const ac = new AbortController();
    const got: WatchBatch[] = [];
    const watching = (async () => {
      for await (const b of store.watch({ prefix: '/a/', signal: ac.signal })) {
        got.push(b);
        if (got.length === 2) return;
      }
    })();
    // Commits of this process (handed to the ring as they are) and of another (read back from the log).
    for (let i = 0; i < 40; i++) await store.put(`/b/${i}`, 'x');
    for (let i = 0; i < 40; i++) await other.put(`/c/${i}`, 'x');
    await new Promise((r) => setTimeout(r, 700)); // the hub's poll: the other store's NOTIFYs are in
    const readsWhileOthersWrote = reads;
    const mine = await other.put('/a/1', 'mine');
    await store.put('/b/last', 'x');
    const last = await store.put('/a/2', 'again');
    await watching;
    expect(got.map((b) => [b.revision, b.events.map((e) => e.kv.key)])).toEqual([
      [mine.revision, ['/a/1']],
      [last.revision, ['/a/2']],
    ]);
    // Not one read through the 80 head moves of other keys; then a read per wake of its own —
    // one for both if it was slow to wake, one more each if a commit lands while it reads (the
    // ring ends short of the head, so it reads on before it parks). The old wait: 74.
    expect(readsWhileOthersWrote).toBe(0);
    expect(reads).toBeLessThanOrEqual(4);
  } finally {
    await store.close();
    await other.close();
  }
});
