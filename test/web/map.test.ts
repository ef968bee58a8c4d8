import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { HttpTestAgent } from '../server/http-agent.js';
import { OUTPUT, openConsole, openSim, pageWithErrors, podAndBrowser, webService } from './support.js';

/** The chips of a node box on the map: `id:class-state` (ghosts included). */
async function chips(page: Page, node: string): Promise<{ id: string; state: string; replaces?: string; movedTo?: string }[]> {
  return page.$$eval(`#view-map .mnode[data-node="${node}"] .chip`, (els) =>
    (els as HTMLElement[]).map((e) => ({
      id: e.dataset.id!,
      state: Array.from(e.classList).find((c) => c.startsWith('s-'))!.slice(2),
      ...(e.dataset.replaces ? { replaces: e.dataset.replaces } : {}),
      ...(e.dataset.movedTo ? { movedTo: e.dataset.movedTo } : {}),
    })),
  );
}

async function keys(page: Page, ...k: string[]): Promise<void> {
  for (const key of k) await page.keyboard.press(key);
}

describe('console: the shell and the cluster map, in headless Chromium', () => {
  const fx = podAndBrowser({ openReads: true });

  it('simulation: a killed node greys out and the map shows its replicas moving, in place', async () => {
    const { page, errors } = await pageWithErrors(fx.browser);
    // Once stuck at "connecting" in a full run: a host network change (openSim).
    await openSim(page, `${fx.pod.url}/?sim=1&seed=7#map`, errors);
    expect(await page.locator('#tabs a.active').innerText()).toBe('map');
    await expect.poll(() => page.locator('#view-map .mnode').count()).toBe(3);

    await page.click('button[data-fixture=web]');
    await page.selectOption('#speed', '100');
    await page.click('#play');
    await expect.poll(() => page.locator('#view-map .mnode .chip.s-running').count(), { timeout: 30_000 }).toBe(6);
    await page.click('#play'); // pause
    const before = await chips(page, 'node1');
    expect(before.map((c) => c.state)).toEqual(['running', 'running']);
    await page.screenshot({ path: join(OUTPUT, 'map-sim.png') });

    // The map is updated in place: the boxes and chips drawn now are the same elements afterwards.
    await page.evaluate(() => {
      for (const el of Array.from(document.querySelectorAll('#view-map .mnode, #view-map .chip'))) (el as unknown as { mark: number }).mark = 1;
    });

    // The node controller's `/lost/` findings reach the map's model through the change feed (counted as the model takes them).
    await page.evaluate(() => {
      const w = window as unknown as { lostSeen: number; ccaConsole: { ui: { map: { model: { change: (p: { kind: string }, v: unknown, kv: unknown) => void } } } } };
      const model = w.ccaConsole.ui.map.model;
      const change = model.change.bind(model);
      w.lostSeen = 0;
      model.change = (p, v, kv) => {
        if (p.kind === 'lost' && v) w.lostSeen++;
        change(p, v, kv);
      };
    });

    // Kill node1 from the nodes view (g n), back to the map (g m).
    await keys(page, 'g', 'n');
    await expect.poll(() => page.locator('#tabs a.active').innerText()).toBe('nodes');
    expect(page.url()).toContain('#nodes');
    await page.click('table[data-id="nodes"] tr[data-key="node1"] button[data-act=kill]');
    await keys(page, 'g', 'm');
    await expect.poll(() => page.locator('#tabs a.active').innerText()).toBe('map');
    await page.click('#play');
    await expect.poll(() => page.locator('#view-map .mnode[data-node=node1]').getAttribute('data-state'), { timeout: 45_000 }).toBe('lost');
    await expect.poll(() => page.evaluate(() => (window as unknown as { lostSeen: number }).lostSeen), { timeout: 30_000 }).toBe(2);
    // Each replica of node1 stays there as a ghost naming where its replacement went; the replacement runs there.
    await expect.poll(async () => {
      const ghosts = await chips(page, 'node1');
      const moved = await Promise.all(before.map(async (b) => {
        const g = ghosts.find((c) => c.id === b.id);
        if (g?.state !== 'ghost' || !g.movedTo) return false;
        return (await chips(page, g.movedTo)).some((c) => c.replaces === b.id && c.state === 'running');
      }));
      return moved.every(Boolean);
    }, { timeout: 45_000 }).toBe(true);
    await page.click('#play');
    expect(await page.locator('#view-map .mnode[data-node=node1] .moves').innerText()).toMatch(/^moved → node\d ×\d/);
    const inPlace = await page.evaluate((ids) => ({
      newNodes: Array.from(document.querySelectorAll('#view-map .mnode')).filter((el) => !(el as unknown as { mark?: number }).mark).length,
      sameChips: ids.filter((id) => (document.querySelector(`#view-map .chip[data-id="${id}"]`) as unknown as { mark?: number } | null)?.mark === 1).length,
    }), before.map((b) => b.id));
    expect(inPlace).toEqual({ newNodes: 0, sameChips: before.length });
    const timings = await page.evaluate(() => (window as unknown as { ccaConsole: { ui: { map: { timings: unknown[] } } } }).ccaConsole.ui.map.timings.length);
    expect(timings).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUTPUT, 'map-sim-lost.png') });
    expect(errors).toEqual([]);
    await page.close();
  }, 270_000);

  it('live: the map shows the running replicas and the pending tray; a filter in the URL survives a reload; keys move around', async () => {
    const agent = new HttpTestAgent(fx.pod.url, fx.pod.join, 'node1', 'a');
    const agent2 = new HttpTestAgent(fx.pod.url, fx.pod.join, 'node2', 'b');
    try {
      await agent.start();
      await agent2.start();
      await fx.pod.api('POST', '/v1/apply', { services: [webService('web', 3), webService('api', 2), webService('ghost', 1, 'ghost:9')] });
      const { page, errors } = await pageWithErrors(fx.browser);
      await openConsole(page, `${fx.pod.url}/#map`, 'live', errors, 60_000);

      // Every running replica the API lists is a running chip on its node.
      const running = async () => ((await fx.pod.api('GET', '/v1/replicas')).replicas as { id: string; node?: string; state: string }[]).filter((r) => r.state === 'running');
      await expect.poll(async () => (await running()).length, { timeout: 15_000 }).toBe(5);
      await expect.poll(async () => {
        const drawn = [...(await chips(page, 'node1')), ...(await chips(page, 'node2'))].filter((c) => c.state === 'running').map((c) => c.id).sort();
        return drawn;
      }, { timeout: 15_000 }).toEqual((await running()).map((r) => r.id).sort());
      for (const r of await running()) expect(await page.locator(`#view-map .mnode[data-node="${r.node}"] .chip[data-id="${r.id}"]`).count()).toBe(1);
      // The ghost replica waits in the tray with the scheduler's reason.
      await expect.poll(() => page.locator('#view-map .map-tray li').first().innerText(), { timeout: 15_000 }).toMatch(/ghost-\w+: .*ghost:9/);
      await page.screenshot({ path: join(OUTPUT, 'map-live.png') });

      // A change arrives without a reload: scale api to 3.
      await fx.pod.api('POST', '/v1/apply', { services: [webService('web', 3), webService('api', 3), webService('ghost', 1, 'ghost:9')] });
      await expect.poll(() => page.locator('#view-map .chip.s-running[data-service=api]').count(), { timeout: 15_000 }).toBe(3);

      // The search box filters the map and goes into the URL …
      await keys(page, '/');
      await page.keyboard.type('service:web');
      await expect.poll(() => page.locator('#view-map .chip[data-service=web]:not(.out)').count()).toBe(3);
      expect(await page.locator('#view-map .chip[data-service=api]:not(.out)').count()).toBe(0);
      expect(decodeURIComponent(page.url())).toContain('#map?q=service:web');
      // … and survives a reload.
      await page.reload();
      await expect.poll(() => page.locator('#conn').getAttribute('data-state'), { timeout: 30_000 }).toBe('live');
      expect(await page.locator('#search').inputValue()).toBe('service:web');
      await expect.poll(() => page.locator('#view-map .chip[data-service=web]:not(.out)').count(), { timeout: 15_000 }).toBe(3);
      expect(await page.locator('#view-map .chip[data-service=api]:not(.out)').count()).toBe(0);

      // g s: the services view, filtered the same; j selects the first row, Enter opens its why.
      await page.locator('body').click({ position: { x: 5, y: 300 } });
      await keys(page, 'g', 's');
      await expect.poll(() => page.locator('#tabs a.active').innerText()).toBe('services');
      expect(decodeURIComponent(page.url())).toContain('#services?q=service:web');
      await expect.poll(() => page.locator('table[data-id="services"] tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.key))).toEqual(['web']);
      await keys(page, 'j', 'Enter');
      await expect.poll(() => page.locator('#tabs a.active').innerText()).toBe('why');
      expect(page.url()).toContain('#why/service/web');
      await expect.poll(() => page.locator('#view-why h2').innerText()).toContain('why service web');

      // Another filter through the URL: state:pending on the replicas view.
      await page.goto(`${fx.pod.url}/#replicas?q=state:unplaced`);
      await expect.poll(() => page.locator('table[data-id="replicas"] tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).innerText.split('\t')[1]))).toEqual(['ghost']);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await agent.stop();
      await agent2.stop();
    }
  }, 180_000);
});
