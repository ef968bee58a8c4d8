import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../../agent/agent.js';
import { FakeRuntime } from '../../agent/runtime-fake.js';
import { StateDir } from '../../agent/state.js';
import { tempDir } from '../agent/support.js';
import { waitFor } from '../support/wait.js';
import { collectErrors, launchBrowser, openConsole, OUTPUT, startTestPod, webService, type TestPod } from './support.js';

async function cell(page: Page, table: string, key: string, column: number): Promise<string> {
  return page.locator(`table[data-id="${table}"] tr[data-key="${key}"] td`).nth(column).innerText();
}

/** The timeline's rows, oldest first: "subject: what". */
async function timeline(page: Page): Promise<string[]> {
  const rows = await page.$$eval('table[data-id="timeline"] tbody tr', (trs) => (trs as HTMLTableRowElement[]).map((tr) => `${tr.cells[1]!.innerText.replace(/\s*⌕$/, '')}: ${tr.cells[2]!.innerText}`));
  return rows.reverse();
}

async function points(page: Page, table: string, key: string, column: number): Promise<number> {
  return Number(await page.locator(`table[data-id="${table}"] tr[data-key="${key}"] td`).nth(column).locator('svg.chart').getAttribute('data-points'));
}

/**
 * The history views against a real pod and a real agent (the fake runtime, in process),
 * followed through the watch: decisions as they are made, usage as the agent reports it, a
 * rolling update to complete.
 */
describe('console history views (timeline, usage, rollouts), live mode, in headless Chromium', () => {
  let pod: TestPod;
  let agent: Agent;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  const tmp = tempDir('web-history');
  let load = 30;

  beforeAll(async () => {
    pod = await startTestPod({ openReads: true });
    const runtime = new FakeRuntime({ catalogue: { 'busybox:1.35': 'sha256:bb135', 'busybox:1.36': 'sha256:bb136' } });
    // Usage that changes with every report, as a workload's would.
    runtime.cpuUsage = () => (load = (load % 90) + 7);
    agent = new Agent({
      server: pod.url, node: 'node1', token: pod.join, state: new StateDir(tmp.dir), runtime,
      record: { address: '127.0.0.1', zone: 'a', capacity: { cpuMillis: 4000, memoryBytes: 4 * 2 ** 30 } },
      pollWaitMs: 2_000, reportEveryMs: 500, usageEveryMs: 500, log: () => undefined,
    });
    await agent.start();
    await waitFor('registered', () => agent.status().registered, 10_000);
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.close();
    await pod?.close();
    tmp.cleanup();
  });

  it('lists decisions as they are made, links to why, backfills a filtered replica after a reload; usage grows; a rollout completes', async () => {
    const page = await browser.context.newPage();
    const errors: string[] = [];
    // Refused connections are expected once (the server stopped, below); script errors are not.
    collectErrors(page, errors, { accept: (t) => t.startsWith('Failed to load resource') });
    const listed: string[] = [];
    page.on('request', (r) => r.url().includes('/v1/state?prefix=%2Fdecisions%2Fnode%2F') && listed.push(r.url()));
    // Once stuck at "connecting" in a full run, beside network-e2e's namespaces (openConsole).
    await openConsole(page, `${pod.url}/#timeline`, 'live', errors, 60_000);

    // ── timeline: a service applied while the page is open, its replicas created, placed and running, in order ──
    await pod.api('POST', '/v1/apply', { services: [webService('web', 2, 'busybox:1.35')] });
    await expect.poll(async () => (await timeline(page)).filter((r) => / running on node1$/.test(r)).length, { timeout: 20_000 }).toBe(2);
    const rows = await timeline(page);
    const replica = rows.find((r) => r.endsWith(': created'))!.split(/[ :]/)[1]!;
    const order = [/^service web: scaled up by 2$/, new RegExp(`^replica ${replica}: created$`), new RegExp(`^replica ${replica}: placed on node1$`), new RegExp(`^replica ${replica}: running on node1$`)];
    const at = order.map((o) => rows.findIndex((r) => o.test(r)));
    expect(at.every((i) => i >= 0), `${rows.join('\n')}`).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    await page.screenshot({ path: join(OUTPUT, 'live-timeline.png'), fullPage: true });

    // A filter in the URL survives a reload; the session's log is gone, the replica's retained decisions are listed again.
    await page.goto(`${pod.url}/#timeline?q=${encodeURIComponent(`replica:${replica}`)}`);
    await page.reload();
    // The shell fills the box from the URL when it starts, which may be after the load event.
    await expect.poll(() => page.locator('#search').inputValue(), { timeout: 20_000 }).toBe(`replica:${replica}`);
    await expect.poll(async () => (await timeline(page)).join('\n'), { timeout: 20_000 }).toMatch(new RegExp(`replica ${replica}: created\\nreplica ${replica}: placed on node1`));
    expect((await timeline(page)).every((r) => r.includes(replica))).toBe(true);
    expect(await page.locator('.timeline-scope').innerText()).toContain(`replica ${replica}`);
    await page.locator(`table[data-id="timeline"] a.why[href="#why/replica/${replica}"]`).first().click();
    await expect.poll(() => page.locator('#view-why .chain-status').innerText(), { timeout: 10_000 }).toMatch(/^complete/);

    // The search follows to every view: in usage, a replica's filter shows its service and its node.
    await page.click('#tabs a[data-view=usage]');
    const keys = (t: string) => page.locator(`table[data-id="${t}"] tbody tr`).evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.key));
    await expect.poll(() => keys('usage-services'), { timeout: 10_000 }).toEqual(['service:web']);
    expect(await keys('usage-nodes')).toEqual(['node:node1']);
    await page.fill('#search', '');

    // ── usage: the agent reports every half second; the service's and the node's sparklines grow ──
    await expect.poll(() => points(page, 'usage-services', 'service:web', 1), { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    const before = await points(page, 'usage-services', 'service:web', 1);
    await expect.poll(() => points(page, 'usage-services', 'service:web', 1), { timeout: 20_000 }).toBeGreaterThan(before);
    expect(await points(page, 'usage-nodes', 'node:node1', 1)).toBeGreaterThan(0);
    expect(await cell(page, 'usage-services', 'service:web', 4)).toMatch(/^\d+m · 2Mi · 2 reporting$/);
    await page.screenshot({ path: join(OUTPUT, 'live-usage.png'), fullPage: true });

    // ── rollouts: a new image rolls web, followed to complete ──
    await page.click('#tabs a[data-view=rollouts]');
    await pod.api('POST', '/v1/apply', { services: [webService('web', 2, 'busybox:1.36')] });
    const state = () => page.locator('table[data-id="rollouts"] tr[data-key=web] [data-state]').getAttribute('data-state', { timeout: 1_000 }).catch(() => undefined);
    await expect.poll(state, { timeout: 30_000 }).toBe('complete');
    expect(await cell(page, 'rollouts', 'web', 3)).toContain('2/2 new ready · 2 new live · 0 old left');
    expect(await points(page, 'rollouts', 'web', 4)).toBeGreaterThan(1);
    await page.screenshot({ path: join(OUTPUT, 'live-rollout.png'), fullPage: true });

    // A subject's history that cannot be listed (the server is away) is said, and asked again
    // only when the filter changes, not on every redraw.
    await pod.stopHttp();
    // (an older link, one parameter per field, reads as `#timeline?q=node:node1`)
    await page.evaluate(() => (location.hash = '#timeline?node=node1'));
    await expect.poll(() => page.locator('.backfill-error').first().innerText().catch(() => ''), { timeout: 15_000 }).toContain('could not list /decisions/node/node1/');
    await pod.startHttp();
    await expect.poll(() => page.locator('#conn').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    expect(listed).toHaveLength(1);
    expect(await page.locator('#search').inputValue()).toBe('node:node1');
    await page.evaluate(() => (location.hash = `#timeline?q=${encodeURIComponent('node1 node:node1')}`));
    await expect.poll(() => page.locator('.backfill-error').count(), { timeout: 15_000 }).toBe(0);
    expect(listed).toHaveLength(2);

    expect(errors).toEqual([]);
  }, 120_000);
});
