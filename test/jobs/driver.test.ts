import { afterEach, expect, test } from 'vitest';
import type { Diagnostic } from '../../core/diagnostics/types.js';
import { MemoryStore } from '../../db/memory.js';
import type { Controller } from '../../jobs/controller.js';
import { controllers } from '../../jobs/controllers/index.js';
import { startDriver, type Driver } from '../../jobs/driver.js';
import { GatedStore } from '../../jobs/sim/gated-store.js';
import { Bench } from './harness.js';

const drivers: Driver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.stop();
});

test('runs the real controllers to convergence on changes alone', async () => {
  const b = new Bench();
  await b.register('n1');
  const driver = startDriver({ store: b.store, controllers: controllers({ retention: false }), clock: { now: () => b.t, sleep: (ms, s) => new Promise((r) => { const t = setTimeout(r, Math.min(ms, 20)); s.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); }) } });
  drivers.push(driver);
  await driver.idle();
  await b.apply({ name: 'web', image: 'web:1', replicas: 3 });
  await driver.idle();
  expect(await b.assignments('n1')).toHaveLength(3);
  const rev = await b.store.revision();
  await new Promise((r) => setTimeout(r, 50));
  expect(await b.store.revision()).toBe(rev); // converged: nothing more is written
});

test('never runs one (controller, subject) twice at once; keyed steps fan out per subject', async () => {
  const store = new MemoryStore();
  let running = 0;
  let overlap = false;
  const seen = new Set<string>();
  const slow: Controller = {
    name: 'slow',
    watches: ['/x/'],
    subjectOf: (k) => k.split('/')[2],
    subjects: async () => ['a', 'b'],
    async reconcile({ subject }) {
      seen.add(subject!);
      if (subject === 'a' && ++running > 1) overlap = true;
      await new Promise((r) => setTimeout(r, 5));
      if (subject === 'a') running--;
      return {};
    },
  };
  const driver = startDriver({ store, controllers: [slow] });
  drivers.push(driver);
  for (let i = 0; i < 20; i++) await store.put('/x/a', String(i));
  await driver.idle();
  expect(overlap).toBe(false);
  expect([...seen].sort()).toEqual(['a', 'b']);
});

test('a failing store is reported once per outage, steps back off and resume', async () => {
  const inner = new MemoryStore();
  let down = false;
  const store = new GatedStore(inner, () => (down ? 'store-down' : 'up'));
  const reports: Diagnostic[] = [];
  let runs = 0;
  let recovered = 0;
  const c: Controller = {
    name: 'ticker',
    watches: [],
    async reconcile({ store: s, now }) {
      runs++;
      await s.get('/k');
      return { at: now + 5 };
    },
  };
  const driver = startDriver({ store, controllers: [c], onDiagnostic: (d) => reports.push(d), onRecovered: () => recovered++, maxBackoffMs: 20 });
  drivers.push(driver);
  await new Promise((r) => setTimeout(r, 50));
  down = true;
  await new Promise((r) => setTimeout(r, 200));
  const during = runs;
  down = false;
  await new Promise((r) => setTimeout(r, 100));
  expect(reports.map((d) => d.code)).toEqual(['CCA-E0403']);
  expect(recovered).toBe(1);
  expect(runs).toBeGreaterThan(during); // resumed
});

test('a change the controller ignores, judged on the values before and after, does not wake it', async () => {
  const store = new MemoryStore();
  const runs: string[] = [];
  const c: Controller = {
    name: 'picky',
    watches: ['/x/'],
    // Passes over any put that keeps the value's first character.
    ignores: (ch) => ch.before![0] === ch.after![0],
    async reconcile({ store: s }) {
      runs.push((await s.get('/x/a'))?.value ?? '-');
      return {};
    },
  };
  const driver = startDriver({ store, controllers: [c] });
  drivers.push(driver);
  await driver.idle();
  runs.length = 0; // the first look of every controller at start
  await store.put('/x/a', 'a1'); // created: no value before, so it wakes
  await driver.idle();
  await store.put('/x/a', 'a2'); // ignored
  await driver.idle();
  await store.put('/x/a', 'b1'); // wakes
  await driver.idle();
  expect(runs).toEqual(['a1', 'b1']);
});
