import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { pageWithErrors, podAndBrowser } from './support.js';
// @ts-expect-error plain ES module of the console, no types
import { REQUEST_MS as requestMs } from '../../web/live.js';

const REQUEST_MS = requestMs as number;

/**
 * Wait until `until()` gives `want`, moving the page's fake clock on whenever the console counts
 * down to loading itself again: the host's network may fail a load at any time (other tests
 * create network namespaces), and a paused clock would hold that countdown for good.
 */
async function waitMovingOn<T>(page: Page, until: () => Promise<T>, want: T): Promise<void> {
  await expect
    .poll(
      async () => {
        if ((await page.locator('#conn').getAttribute('data-state')) === 'reloading') await page.clock.fastForward(30_000);
        return until();
      },
      { timeout: 30_000 },
    )
    .toBe(want);
}

/** Fail the first load of `glob` as a dropped network would; how many loads of it were asked for so far. */
async function refuseOnce(page: Page, glob: string): Promise<() => number> {
  let asked = 0;
  await page.route(glob, async (route) => {
    if (asked++ === 0) await route.abort('internetdisconnected');
    else await route.continue();
  });
  return () => asked;
}

/**
 * The console when the network fails it, in Chromium: a module of its code that fails to load
 * (the browser fails loads in flight when the machine's network changes: net::ERR_NETWORK_CHANGED)
 * and a read the server never answers. Both used to leave the page "connecting…" for good.
 */
describe('console, loads that fail', () => {
  const fx = podAndBrowser({ openReads: true });

  it('a module that failed to load: the page loads itself again and goes live', async () => {
    const { page, errors } = await pageWithErrors(fx.browser, { consoleErrors: false });
    // Deep in the graph (app.js → map.js → svg.js), so the entry itself loaded.
    const asked = await refuseOnce(page, '**/web/svg.js');
    // A paused fake clock holds the page at its countdown until the test moves it on.
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1_000);
    await page.goto(`${fx.pod.url}/#map`);
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), { timeout: 30_000 }).toBe('reloading');
    expect(await page.locator('#conn').innerText()).toMatch(/^the console did not load \(1 try: Failed to fetch dynamically imported module: \S+\/web\/app\.js\); loading it again in 1s$/);
    // Time flows again (the clock is the browser context's, which the other tests share).
    await page.clock.resume();
    await waitMovingOn(page, () => page.locator('#conn').getAttribute('data-state'), 'live');
    // Twice at least: more when the host's network changed meanwhile (other tests' namespaces).
    expect(asked()).toBeGreaterThanOrEqual(2);
    // The failed load is reported as an uncaught error (left out when the host's network
    // changed meanwhile: collectErrors), and nothing else is.
    expect(errors.filter((e) => !e.includes('Failed to fetch dynamically imported module'))).toEqual([]);
    expect(await page.evaluate(() => sessionStorage.getItem('cca-boot-tries'))).toBeNull();
    await page.close();
  }, 60_000);

  it('simulation mode: a module of the simulation that failed to load is loaded again too', async () => {
    const { page, errors } = await pageWithErrors(fx.browser, { consoleErrors: false });
    // Imported by app.js only in simulation mode, after the entry's graph loaded.
    const asked = await refuseOnce(page, '**/web/sim.js');
    await page.goto(`${fx.pod.url}/?sim=1`);
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), { timeout: 30_000 }).toBe('sim');
    expect(asked()).toBeGreaterThanOrEqual(2);
    expect(errors.filter((e) => !e.includes('Failed to fetch dynamically imported module'))).toEqual([]);
    await page.close();
  }, 60_000);

  it('a read the server never answers: it gives up on it and lists again', async () => {
    const { page, errors } = await pageWithErrors(fx.browser, { consoleErrors: false });
    let held = 0;
    await page.route('**/v1/state?*', async (route) => {
      if (held++ === 0) return; // never answered, never failed
      await route.continue();
    });
    await page.clock.install();
    await page.goto(fx.pod.url);
    await waitMovingOn(page, async () => held > 0, true);
    expect(await page.locator('#conn').getAttribute('data-state')).toBe('connecting');
    await page.clock.fastForward(REQUEST_MS + 100);
    await expect.poll(() => page.locator('#conn').getAttribute('data-state')).toBe('reconnecting');
    expect(await page.locator('#conn').getAttribute('title')).toBe(`/v1/state did not answer within ${REQUEST_MS / 1000} s`);
    await waitMovingOn(page, () => page.locator('#conn').getAttribute('data-state'), 'live');
    expect(held).toBeGreaterThan(1);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
