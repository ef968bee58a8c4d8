import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../../db/memory.js';
import { testApp, testDeps } from '../harness.js';

/** A gauge's value as the next scrape reads it. */
async function gauge(deps: ReturnType<typeof testDeps>, name: string): Promise<number> {
  const m = deps.metrics.registry.getSingleMetric(name);
  return (await m!.get()).values[0]?.value ?? NaN;
}

describe('the shared feeds on /metrics', () => {
  test('cca_watch_feeds counts the prefixes followed, cca_watch_joined the streams they feed; both fall to 0 when the watchers leave', async () => {
    const store = new MemoryStore();
    const { app, deps } = testApp(testDeps(store));
    const watches = ['/a/', '/a/', '/a/', '/b/'].map((prefix) => {
      const ac = new AbortController();
      return { ac, res: app.request(`/v1/watch?prefix=${encodeURIComponent(prefix)}`, { signal: ac.signal }) };
    });
    const readers = await Promise.all(watches.map(async (w) => (await w.res).body!.getReader()));
    // Each stream's open event: the watch is set up when it is sent.
    for (const r of readers) await r.read();
    for (let i = 0; i < 100 && (await gauge(deps, 'cca_watch_joined')) < 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await gauge(deps, 'cca_watch_feeds')).toBe(2);
    expect(await gauge(deps, 'cca_watch_joined')).toBe(4);
    for (const [i, w] of watches.entries()) {
      w.ac.abort();
      await readers[i]!.cancel().catch(() => undefined);
    }
    for (let i = 0; i < 100 && (await gauge(deps, 'cca_watch_feeds')) > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await gauge(deps, 'cca_watch_feeds')).toBe(0);
    expect(await gauge(deps, 'cca_watch_joined')).toBe(0);
    await store.close();
  });
});
