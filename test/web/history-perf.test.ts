import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSim, podAndBrowser } from './support.js';

/**
 * The history views' cost at scale, in Chromium: 10,000 replicas' usage reports (100 services,
 * 1,000 nodes), 2,100 decisions into a log that keeps 2,000, and the open timeline redrawn after
 * each new decision. The times are printed, not asserted; the bounds are asserted.
 */
describe('console history views at scale, in headless Chromium', () => {
  const fx = podAndBrowser({ openReads: true });

  it('keeps its logs bounded and redraws the timeline in place', async () => {
    const page = await fx.browser.context.newPage();
    await openSim(page, `${fx.pod.url}/?sim=1&seed=1#timeline`);
    const r = (await page.evaluate(readFileSync(join(import.meta.dirname, 'history-perf.page.js'), 'utf8'))) as Record<string, number>;
    console.log(`history views: usage ${r.usageMsPerObservation!.toFixed(3)} ms per observation (${r.series} series), timeline ${r.timelineMsPerDecision!.toFixed(3)} ms per decision, timeline redraw with ${r.maxEntries} entries: median ${r.timelineUpdateMedianMs!.toFixed(1)} ms`);
    expect(r.series).toBe(1_100);
    expect(r.entries).toBe(r.maxEntries);
    expect(r.samples).toBeLessThanOrEqual(r.maxSamples!);
    expect(r.rows).toBe(300);
  }, 200_000);
});
