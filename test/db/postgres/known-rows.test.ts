import { describe, expect, it } from 'vitest';
import { KnownRows } from '../../../db/postgres/known-rows.js';
import type { LogRow } from '../../../db/postgres/sql/writeChanges.js';

const put = (revision: number, key: string, value: string): LogRow => ({ revision, seq: 0, key, value, deleted: false, createRevision: revision, version: 1, lease: 0, prevRevision: 0 });
const kv = (key: string, value: string, rev: number) => ({ key, value, createRevision: rev, modRevision: rev, version: 1, lease: 0 });

describe('KnownRows: what the write batcher knows at one head', () => {
  it('answers a snapshot only when every key is known, absent ones included, at the head it learnt', () => {
    const known = new KnownRows();
    known.learn({ revision: 5, compactRevision: 0, rows: [kv('/a', '1', 3)] }, ['/a', '/b']);
    expect(known.snapshotOf(['/a', '/b'])).toEqual({ revision: 5, compactRevision: 0, rows: [kv('/a', '1', 3)] });
    expect(known.snapshotOf(['/a', '/c'])).toBeUndefined();
    known.committed(5, 6, [put(6, '/c', 'x')]);
    expect(known.snapshotOf(['/a', '/c'])?.revision).toBe(6);
    // A commit from another head: what was known before is not known at the new one.
    known.committed(9, 10, [put(10, '/d', 'y')]);
    expect(known.snapshotOf(['/a'])).toBeUndefined();
    expect(known.snapshotOf(['/d'])?.rows).toEqual([kv('/d', 'y', 10)]);
  });

  it('keeps the newest within its key bound, evicting the oldest learnt, across many commits', () => {
    const known = new KnownRows(100, 1 << 20);
    let head = 1;
    known.learn({ revision: head, compactRevision: 0, rows: [] }, ['/first']);
    for (let batch = 0; batch < 50; batch++) {
      const rows = Array.from({ length: 30 }, (_, i) => put(head + 1, `/k/${batch}/${i}`, 'v'));
      known.committed(head, head + 1, rows);
      head++;
    }
    expect(known.snapshotOf(['/first'])).toBeUndefined();
    expect(known.snapshotOf(['/k/46/19'])).toBeUndefined(); // 100 newest: the last 3 batches and 10 of the 4th
    expect(known.snapshotOf(['/k/47/0', '/k/49/29'])?.rows).toHaveLength(2);
    expect(known.snapshotOf(Array.from({ length: 10 }, (_, i) => `/k/46/${20 + i}`))?.rows).toHaveLength(10);
  });

  it('keeps within its byte bound', () => {
    const known = new KnownRows(10_000, 10_000);
    known.learn({ revision: 1, compactRevision: 0, rows: [] }, []);
    known.committed(1, 2, Array.from({ length: 100 }, (_, i) => put(2, `/big/${String(i).padStart(3, '0')}`, 'x'.repeat(500))));
    // 2 bytes a character, 48 a row: about nine of 1,062 bytes fit in 10,000.
    expect(known.snapshotOf(['/big/099', '/big/091'])?.rows).toHaveLength(2);
    expect(known.snapshotOf(['/big/090'])).toBeUndefined();
  });
});
