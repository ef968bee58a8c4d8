import { describe, expect, test } from 'vitest';
import { CcaError } from '../../../core/diagnostics/index.js';
import { MemoryStore } from '../../../db/memory.js';
import { readSse, testApp, testDeps } from '../harness.js';

/** A store that cannot be reached for its first `down` revision reads, as in an outage. */
class AwayAtFirst extends MemoryStore {
  asked = 0;
  constructor(private down: number) {
    super();
  }
  override async revision(): Promise<number> {
    this.asked++;
    if (this.down-- > 0) throw new CcaError('CCA-E0111', { backend: 'memory', reason: 'connect ECONNREFUSED', target: 'test' });
    return super.revision();
  }
}

describe('a watch opened while the store is away', () => {
  test('opens when the store is back and delivers what is written after, with heartbeats meanwhile', async () => {
    const store = new AwayAtFirst(3);
    const { app } = testApp(testDeps(store));
    const res = await app.request('/v1/watch?prefix=/a/');
    expect(res.status).toBe(200);
    let wrote = false;
    const events = await readSse(res, (es) => {
      if (!wrote && es.some((e) => e.event === 'open')) {
        wrote = true;
        void store.put('/a/x', '1');
      }
      return es.some((e) => e.event === 'batch' || e.event === 'error');
    });
    expect(events.filter((e) => e.event === 'error')).toEqual([]);
    expect(store.asked).toBe(4);
    // 3 failures: 100 + 200 + 400 ms of waiting, under the test's 50 ms heartbeat.
    expect(events.some((e) => e.event === 'comment' && e.data === 'heartbeat')).toBe(true);
    const batch = events.find((e) => e.event === 'batch')!;
    expect(JSON.parse(batch.data).events[0].kv.key).toBe('/a/x');
  });

  test('an error that is not the store being away ends the stream with its code at once', async () => {
    const store = new (class extends MemoryStore {
      override async revision(): Promise<number> {
        throw new CcaError('CCA-E0101', { requested: 1, compactRevision: 5 });
      }
    })();
    const { app } = testApp(testDeps(store));
    const events = await readSse(await app.request('/v1/watch?prefix=/a/'), (es) => es.some((e) => e.event === 'error'));
    expect(JSON.parse(events.find((e) => e.event === 'error')!.data).error.code).toBe('CCA-E0101');
  });
});
