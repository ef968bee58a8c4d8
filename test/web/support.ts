import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { chromium, type BrowserContext, type Page, type Request } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { MemoryStore } from '../../db/memory.js';
import { controllers } from '../../jobs/controllers/index.js';
import { startDriver, type Driver } from '../../jobs/driver.js';
import { why } from '../../jobs/decisions/why.js';
import { createApp } from '../../handlers/app.js';
import { ensureTokens, newRoleToken } from '../../handlers/auth.js';
import { defaultLimits } from '../../handlers/deps.js';
import { ServerMetrics } from '../../handlers/metrics.js';
import { requestIdGenerator } from '../../handlers/request-id.js';
import { listen, type RunningHttp } from '../../handlers/serve.js';
import { TEST_SECRET_BOX } from '../handlers/harness.js';
import { needs } from '../support/prerequisites.js';
import { freePort } from '../support/ports.js';

/** Screenshots of each view land here (linked from docs/console.md, copied to docs/console/). */
export const OUTPUT = join(import.meta.dirname, '..', '..', '.tmp', 'test-output', 'web');

/**
 * One server pod whose HTTP listener can be stopped and started again on the same port
 * while its store and controllers keep going — a pod restart over a store that survives
 * it (as Postgres does), so the console has something to miss and catch up on.
 */
export interface TestPod {
  url: string;
  admin: string;
  join: string;
  store: MemoryStore;
  app: ReturnType<typeof createApp>;
  /** Through the API, with or without the listener (app.request needs no socket). */
  api(method: string, path: string, body?: unknown): Promise<Record<string, unknown>>;
  stopHttp(): Promise<void>;
  startHttp(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestPod(opts: { openReads: boolean }): Promise<TestPod> {
  const store = new MemoryStore();
  const admin = newRoleToken('admin');
  const join = newRoleToken('join');
  await ensureTokens(store, { admin, join });
  const driver: Driver = startDriver({ store, controllers: controllers() });
  const app = createApp({
    store,
    metrics: new ServerMetrics(),
    limits: { ...defaultLimits, heartbeatMs: 2_000 },
    newRequestId: requestIdGenerator(),
    version: 'test',
    auth: { openReads: opts.openReads },
    secrets: TEST_SECRET_BOX,
    why: (kind, name) => why(store, kind, name),
  });
  let http: RunningHttp | undefined = await listen(app, { port: await freePort() }); // the restart (below) reuses it: not an ephemeral one (support/ports.ts)
  const port = http.port;
  const pod: TestPod = {
    url: http.url,
    admin,
    join,
    store,
    app,
    async api(method, path, body) {
      const r = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${admin}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await r.json()) as Record<string, unknown>;
      if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
      return json;
    },
    async stopHttp() {
      await http?.close();
      http = undefined;
    },
    async startHttp() {
      http ??= await listen(app, { port });
    },
    async close() {
      await http?.close();
      await driver.stop();
      await store.close();
    },
  };
  return pod;
}

/** Debian's chromium (installed by .ci/run); playwright-core never downloads a browser. */
export function chromiumPath(): string {
  needs('chromium');
  for (const p of [process.env.CHROMIUM_PATH, '/usr/lib/chromium/chromium']) if (p && existsSync(p)) return p;
  return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
}

/** Headless Chromium on a fresh profile directory, removed afterwards. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'cca-chromium-'));
  await mkdir(OUTPUT, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export const webService = (name: string, replicas: number, image = 'busybox:1.35') => ({
  name,
  image,
  replicas,
  resources: { cpuMillis: 100, memoryBytes: 64 * 2 ** 20 },
  stopGraceMs: 500,
});

/** What web/scale.js measureMap answers (the cluster map at scale; see map-perf.test.ts). */
export interface MapFigures {
  nodes: number;
  replicas: number;
  chips: number;
  boxes: number;
  batches: number;
  eventsPerBatch: number;
  medianMs: number;
  p95Ms: number;
  maxMs: number;
  /** The same, without the forced style and layout: the model and DOM updates alone. */
  scriptMedianMs: number;
  scriptP95Ms: number;
  firstDrawMs: number;
  buildMs: number;
}

/**
 * The page-side script that measures the map at scale in a console page, as text: a function
 * passed to page.evaluate would have its dynamic import rewritten by the test runner.
 */
export function measureMapScript(o: { nodes: number; replicas: number; rounds: number; seed: number }): string {
  return `(async () => {
    const main = document.querySelector('main');
    main.querySelectorAll('.view').forEach((v) => { v.hidden = true; });
    const el = document.createElement('section');
    el.id = 'scale-map';
    main.append(el);
    const scale = await import('/web/scale.js');
    return scale.measureMap(el, ${JSON.stringify(o)});
  })()`;
}

export type TestBrowser = Awaited<ReturnType<typeof launchBrowser>>;

/**
 * A test pod and a headless Chromium for the describe block that calls this: started before
 * its tests, closed after them (browser first). Read them through the returned getters.
 */
export function podAndBrowser(opts: { openReads: boolean }): { readonly pod: TestPod; readonly browser: TestBrowser } {
  const held: { pod?: TestPod; browser?: TestBrowser } = {};
  beforeAll(async () => {
    held.pod = await startTestPod(opts);
    held.browser = await launchBrowser();
  });
  afterAll(async () => {
    await held.browser?.close();
    await held.pod?.close();
  });
  return {
    get pod() {
      if (!held.pod) throw new Error('the test pod is not started (used outside a test?)');
      return held.pod;
    },
    get browser() {
      if (!held.browser) throw new Error('Chromium is not started (used outside a test?)');
      return held.browser;
    },
  };
}

/**
 * Collect a page's uncaught errors (and, unless told otherwise, console errors) into `errors`,
 * leaving out what the host's network changing caused: Chromium fails the loads in flight
 * with net::ERR_NETWORK_CHANGED when other tests of the suite create or delete network
 * namespaces, and the console loads itself again (web/boot.js). Those are the machine's, not
 * the page's: a failed load's console line, and the failed module import once such a load was
 * seen (in whichever order Playwright reports the two). `accept` drops other expected errors.
 */
export function collectErrors(page: Page, errors: string[], opts: { consoleErrors?: boolean; accept?: (text: string) => boolean } = {}): string[] {
  let networkChanged = false;
  const environmental = (text: string) => text.includes('net::ERR_NETWORK_CHANGED') || (networkChanged && text.includes('Failed to fetch dynamically imported module'));
  const add = (text: string) => {
    if (!environmental(text) && !opts.accept?.(text)) errors.push(text);
  };
  page.on('requestfailed', (r) => {
    if (networkChanged || !r.failure()?.errorText.includes('ERR_NETWORK_CHANGED')) return;
    networkChanged = true;
    errors.splice(0, errors.length, ...errors.filter((e) => !environmental(e)));
  });
  page.on('pageerror', (e) => add(String(e)));
  if (opts.consoleErrors ?? true) page.on('console', (m) => m.type() === 'error' && add(m.text()));
  return errors;
}

/** A new page whose errors are collected (collectErrors): a test asserts `errors` empty. */
export async function pageWithErrors(browser: TestBrowser, opts: { consoleErrors?: boolean } = {}): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.context.newPage();
  return { page, errors: collectErrors(page, [], opts) };
}

/**
 * Open the console and wait until it reaches `want` ('sim' for simulation mode, 'live' when it
 * follows the server). Chromium fails the loads in flight with net::ERR_NETWORK_CHANGED when
 * the host's addresses change — other tests of the suite create and delete network
 * namespaces — and the console's own first module (web/boot.js) then loads the page again;
 * this waits through that (collectErrors leaves those failures out of a test's errors). A
 * navigation that itself failed that way is tried again, at most three times; `errors`
 * is only named when the page never gets there. Every
 * controller module is transpiled on its first request, slow on a loaded machine, hence the
 * generous bound.
 */
export async function openConsole(page: Page, url: string, want: 'sim' | 'live' | 'auth', errors: string[] = [], timeoutMs = 150_000): Promise<void> {
  const failed: string[] = [];
  // Requests sent and not yet answered, with when they went: a page that stays "connecting"
  // with no error and no failed load is waiting on one of these (the timeout names them).
  const pending = new Map<Request, number>();
  page.on('request', (r) => pending.set(r, Date.now()));
  page.on('requestfinished', (r) => pending.delete(r));
  page.on('requestfailed', (r) => {
    pending.delete(r);
    const why = r.failure()?.errorText ?? 'failed';
    // A navigation cancels the previous page's loads (ERR_ABORTED): that is the reload itself, not the network.
    if (!why.includes('ERR_ABORTED')) failed.push(`${r.url()}: ${why}`);
  });
  const unanswered = () => [...pending].map(([r, at]) => `${r.method()} ${new URL(r.url()).pathname} (${Math.round((Date.now() - at) / 1000)} s)`).slice(0, 20);
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const navigated = await page.goto(url).then(
      () => true,
      (e: unknown) => {
        if (!String(e).includes('net::ERR_') || attempt >= 3) throw e;
        failed.push(String(e));
        return false;
      },
    );
    if (!navigated) continue;
    let state: string | null | undefined;
    for (;;) {
      state = await page.locator('#conn').getAttribute('data-state', { timeout: 1_000 }).catch(() => undefined);
      if (state === want) return;
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the console did not reach state "${want}" within ${timeoutMs} ms (state ${state ?? 'unknown'}); page errors: ${JSON.stringify(errors)}; failed loads: ${JSON.stringify(failed)}; unanswered requests: ${JSON.stringify(unanswered())}`);
  }
}

/** The console in simulation mode (openConsole). */
export function openSim(page: Page, url: string, errors: string[] = [], timeoutMs = 150_000): Promise<void> {
  return openConsole(page, url, 'sim', errors, timeoutMs);
}
