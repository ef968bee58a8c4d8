import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { OUTPUT, openSim, pageWithErrors, podAndBrowser } from './support.js';

async function cell(page: Page, table: string, key: string, column: number): Promise<string> {
  return page.locator(`table[data-id="${table}"] tr[data-key="${key}"] td`).nth(column).innerText();
}

/** The timeline's rows as shown, newest first: "subject: what". */
async function timeline(page: Page): Promise<string[]> {
  return page.$$eval('table[data-id="timeline"] tbody tr', (rows) => (rows as HTMLTableRowElement[]).map((tr) => `${tr.cells[1]!.innerText.replace(/\s*⌕$/, '')}: ${tr.cells[2]!.innerText}`));
}

/** Where `row` (a regexp over "subject: what") is in the timeline, oldest = 0; -1 when absent. */
async function position(page: Page, row: RegExp): Promise<number> {
  const rows = (await timeline(page)).reverse();
  return rows.findIndex((r) => row.test(r));
}

/** Points drawn in a chart of a keyed row. */
async function points(page: Page, table: string, key: string, column: number): Promise<number> {
  return Number(await page.locator(`table[data-id="${table}"] tr[data-key="${key}"] td`).nth(column).locator('svg.chart').getAttribute('data-points'));
}

/** Move the timeline's slider to the entry at `index` (oldest = 0) of the log, as a drag would. */
async function scrubTo(page: Page, index: number): Promise<void> {
  await page.$eval('.scrub-range', (el, i) => {
    const input = el as HTMLInputElement;
    input.value = String(i);
    input.dispatchEvent(new Event('input'));
  }, index);
}

async function play(page: Page, until: () => Promise<boolean>, timeout = 45_000): Promise<void> {
  await page.click('#play');
  await expect.poll(until, { timeout }).toBe(true);
  await page.click('#play');
}

async function applyCca(page: Page, text: string): Promise<void> {
  if (!(await page.locator('#cca-editor').evaluate((d) => (d as HTMLDetailsElement).open))) await page.click('#cca-editor summary');
  await page.fill('#cca-text', text);
  await page.click('#cca-apply');
  expect(await page.locator('#cca-diagnostics li').count()).toBe(0);
  await page.click('#cca-editor summary'); // closed again, out of the screenshots' way
}

describe('console history views (timeline, usage, rollouts), simulation mode, in headless Chromium', () => {
  const fx = podAndBrowser({ openReads: true });

  it('a replica moving off a killed node, in order, linked to why; scrubbing; usage sparklines; a rollout to complete and one stuck', async () => {
    const { page, errors } = await pageWithErrors(fx.browser);
    await openSim(page, `${fx.pod.url}/?sim=1&seed=7#services`, errors);
    await page.click('button[data-fixture=web]');
    await page.selectOption('#speed', '100');
    await play(page, async () => (await cell(page, 'services', 'web', 3)) === '6', 30_000);

    // ── timeline: kill node1, follow one of its replicas to its replacement ──
    await page.click('#tabs a[data-view=timeline]');
    const onNode1 = (await timeline(page)).filter((r) => r.endsWith(': placed on node1')).map((r) => r.split(/[ :]/)[1]!);
    expect(onNode1).toHaveLength(2);
    const moved = onNode1[0]!;
    await page.click('#tabs a[data-view=nodes]');
    await page.click('table[data-id="nodes"] tr[data-key="node1"] button[data-act=kill]');
    // The history views are views of the shell like the others: `g t` opens the timeline.
    await page.keyboard.press('g');
    await page.keyboard.press('t');
    await expect.poll(() => page.locator('#tabs a.active').innerText()).toBe('timeline');
    await play(page, () => replacementRunning(page, moved));
    // Narrow to the moved replica (its ⌕ link): its own decisions and observations, and the replacement's creation citing it.
    await page.locator(`table[data-id="timeline"] tr:has(a.why[href="#why/replica/${moved}"]) a.narrow`).first().click();
    expect(decodeURIComponent(page.url())).toContain(`#timeline?q=replica:${moved}`);
    expect(await page.locator('#search').inputValue()).toBe(`replica:${moved}`);
    await expect.poll(async () => (await timeline(page)).every((r) => r.includes(moved) || r.endsWith(': created'))).toBe(true);
    const replacement = (await timeline(page)).find((r) => r.endsWith(': created') && !r.includes(moved))!.split(/[ :]/)[1]!;
    expect(replacement).toMatch(/^web-/);
    await page.screenshot({ path: join(OUTPUT, 'sim-timeline-replica.png'), fullPage: true });
    await page.click('.timeline-scope a.clear');
    expect(await page.locator('#search').inputValue()).toBe('');
    // The search box filters the timeline as the URL does.
    await page.fill('#search', 'lost node:node1');
    await expect.poll(async () => (await timeline(page)).includes('node node1: lost')).toBe(true);
    expect((await timeline(page)).filter((r) => r.endsWith(': placed on node1'))).toEqual([]);
    expect(decodeURIComponent(page.url()).replace(/\+/g, ' ')).toContain('#timeline?q=lost node:node1');
    await page.fill('#search', '');
    await expect.poll(async () => (await timeline(page)).some((r) => r.startsWith('node node1: lost'))).toBe(true);
    // In order: placed on node1, running there, node1 lost, the replica lost with it, the replacement created, placed elsewhere, running.
    const order = [
      new RegExp(`^replica ${moved}: placed on node1$`),
      new RegExp(`^replica ${moved}: running on node1$`),
      /^node node1: lost$/,
      new RegExp(`^replica ${moved}: lost with node node1`),
      new RegExp(`^replica ${replacement}: created$`),
      new RegExp(`^replica ${replacement}: placed on node[23]$`),
      new RegExp(`^replica ${replacement}: running on node[23]$`),
    ];
    const at = await Promise.all(order.map((o) => position(page, o)));
    expect(at.every((i) => i >= 0), `${order.join(', ')} at ${at.join(', ')}`).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    await page.screenshot({ path: join(OUTPUT, 'sim-timeline.png'), fullPage: true });

    // Scrub back to when the replica ran on node1: the cluster as it was, node1 ready with the replica on it.
    const entries = () => page.evaluate(() => (window as unknown as { ccaConsole: { ui: { history: { timeline: { log: { entries: { type: string; kind?: string; subject?: string; action: string }[] } } } } } }).ccaConsole.ui.history.timeline.log.entries.map((e) => `${e.kind ?? ''} ${e.subject ?? ''}: ${e.action}`));
    const lostAt = (await entries()).indexOf('node node1: lost');
    const ranAt = (await entries()).indexOf(`replica ${moved}: running on node1`);
    expect(ranAt).toBeGreaterThan(0);
    await scrubTo(page, ranAt);
    await expect.poll(() => page.locator('.cluster-at .node-at[data-node=node1] .badge').innerText()).toBe('ready');
    expect(await page.locator(`.cluster-at .node-at[data-node=node1] .tl-chip.running[data-replica="${moved}"]`).count()).toBe(1);
    expect(await page.locator(`.cluster-at .tl-chip[data-replica="${replacement}"]`).count()).toBe(0);
    expect(await page.locator('table[data-id="timeline"] tbody tr.future').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUTPUT, 'sim-timeline-scrubbed.png'), fullPage: true });
    await scrubTo(page, lostAt);
    await expect.poll(() => page.locator('.cluster-at .node-at[data-node=node1] .badge').innerText()).toBe('lost');
    await page.click('.scrub-now');
    await expect.poll(() => page.locator('.cluster-at').isHidden()).toBe(true);
    expect(await page.locator('table[data-id="timeline"] tbody tr.future').count()).toBe(0);

    // The replacement's placement links to its why chain.
    await page.locator(`table[data-id="timeline"] tr:has-text("placed on") a.why[href="#why/replica/${replacement}"]`).first().click();
    expect(page.url()).toContain(`#why/replica/${replacement}`);
    await expect.poll(() => page.locator('#view-why .chain-status').innerText(), { timeout: 10_000 }).toMatch(/^complete/);

    // ── usage: an autoscaled service under load; its sparkline grows as the fake runtime reports ──
    await page.click('button[data-fixture=burn]');
    await page.click('#tabs a[data-view=usage]');
    await page.selectOption('#scale-service', 'burn');
    await page.fill('#load-m', '600');
    await page.click('#load');
    await play(page, async () => (await points(page, 'usage-services', 'service:burn', 1)) >= 3);
    const first = await points(page, 'usage-services', 'service:burn', 1);
    await play(page, async () => (await points(page, 'usage-services', 'service:burn', 1)) > first);
    // Drawn as the autoscaler judges it: percent of request against the target, and its intent between min and max.
    expect(await page.locator('tr[data-key="service:burn"] td:nth-child(2) svg line.ref.target').count()).toBe(1);
    expect(await page.locator('tr[data-key="service:burn"] td:nth-child(4) svg line.ref.bound').count()).toBe(2);
    await play(page, async () => (await cell(page, 'usage-services', 'service:burn', 3)).startsWith('4 of 1–4'));
    expect(await points(page, 'usage-nodes', 'node:node2', 1)).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUTPUT, 'sim-usage.png'), fullPage: true });

    // ── rollouts: a changed image rolls web to complete; an image no node has gets stuck, with the reason ──
    await page.click('#tabs a[data-view=rollouts]');
    expect(await page.locator('table[data-id="rollouts"] tbody tr').count()).toBe(0);
    await applyCca(page, 'service web {\n  image      = "web:2"\n  replicas   = 6\n  cpu        = 250m\n  memory     = 256Mi\n  stop_grace = 2s\n}\n');
    // One virtual second at a time, until some new replicas are ready and some old ones left.
    const rollState = () => page.locator('table[data-id="rollouts"] tr[data-key=web] [data-state]').getAttribute('data-state');
    for (let i = 0; i < 30 && !/^[1-5]\/6 new ready/.test(await cell(page, 'rollouts', 'web', 3).catch(() => '')); i++) await page.click('#step');
    expect(await rollState()).toBe('progressing');
    await page.screenshot({ path: join(OUTPUT, 'sim-rollout-progress.png'), fullPage: true });
    await play(page, async () => (await rollState()) === 'complete');
    expect(await cell(page, 'rollouts', 'web', 3)).toContain('6/6 new ready · 6 new live · 0 old left');
    expect(await points(page, 'rollouts', 'web', 4)).toBeGreaterThan(3);
    await applyCca(page, 'service web {\n  image      = "ghost:1"\n  replicas   = 6\n  cpu        = 250m\n  memory     = 256Mi\n  stop_grace = 2s\n  update { progress_deadline = 30s }\n}\n');
    await play(page, async () => (await rollState()) === 'stuck');
    expect(await cell(page, 'rollouts', 'web', 6)).toMatch(/new replicas? not ready/);
    await page.screenshot({ path: join(OUTPUT, 'sim-rollout-stuck.png'), fullPage: true });

    expect(await page.locator('#invariants').getAttribute('data-ok')).toBe('true');
    expect(errors).toEqual([]);
  }, 270_000);
});

/** The replacement of `replica` runs (read from the simulation's store). */
async function replacementRunning(page: Page, replica: string): Promise<boolean> {
  return page.evaluate(async (old) => {
    const c = (window as unknown as { ccaConsole: { ui: { views?: { replicas: { state: string; reason: string }[] } } } }).ccaConsole;
    return (c.ui.views?.replicas ?? []).some((r) => r.state === 'running' && r.reason.includes(old));
  }, replica);
}
