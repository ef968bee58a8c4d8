import { buildKey, decodeFact, prefixOf } from '../../core/keys.js';
import { listFacts } from '../facts.js';
import { expectThat, result, running, web, type ScenarioResult } from './scenarios.js';
import { Rng } from './rng.js';
import { SimWorld, type SimOptions } from './world.js';

const Gi = 1024 ** 3;
const REQUEST = 250;
const TARGET = 50;
const MIN = 2;
const MAX = 8;
/** The story's scale-down window: shorter than the 5-minute default so a run stays short. */
const WINDOW = 120_000;

/** Synthetic load curves: total CPU demand of a service (millicores) over virtual time. */
export const curves = {
  flat: (m: number) => () => m,
  step: (from: number, to: number, at: number) => (t: number) => (t < at ? from : to),
  /** `m` ± `spread` (a fraction), a fresh value per sample, from a hash of the seed and the time. */
  noisy: (m: number, spread: number, seed: number) => (t: number) => Math.round(m * (1 + spread * (2 * hash01(seed, t) - 1))),
};

function hash01(seed: number, t: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ t, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/** The count that puts a load exactly on target, within the bounds. */
const ideal = (load: number) => Math.min(MAX, Math.max(MIN, Math.ceil(load / ((REQUEST * TARGET) / 100))));

interface Change {
  at: number;
  from: number;
  to: number;
}

/**
 * Follows the intent second by second: every change of the desired count, checked against
 * the bounds, and the live replica records never above max.
 */
class Timeline {
  readonly changes: Change[] = [];
  private last: number | undefined;

  async follow(w: SimWorld, ms: number): Promise<void> {
    const end = w.t + ms;
    while (w.t < end && w.violations.length === 0) {
      await w.runFor(Math.min(1_000, end - w.t));
      const kv = await w.store.get(buildKey('autoscale', 'web'));
      const desired = kv ? decodeFact('autoscale', kv.key, kv.value).desired : undefined;
      if (desired !== undefined && (desired < MIN || desired > MAX)) w.violate('autoscale: within bounds', `intent ${desired} outside ${MIN}..${MAX}`);
      const live = (await listFacts(w.store, 'replica', prefixOf('replica', 'web'))).filter((r) => r.value.desired === 'run' && !r.value.retired).length;
      if (live > MAX) w.violate('autoscale: within bounds', `${live} live replicas, above max ${MAX}`);
      if (desired !== undefined && desired !== this.last) {
        if (this.last !== undefined) {
          this.changes.push({ at: w.t, from: this.last, to: desired });
          w.log(`autoscale: ${this.last} → ${desired}`);
        }
        this.last = desired;
      }
    }
  }

  /** A scale-down never comes sooner than the window after the scale-up before it. */
  flapping(): string[] {
    const out: string[] = [];
    let lastUp: number | undefined;
    for (const c of this.changes) {
      if (c.to > c.from) lastUp = c.at;
      // One second of sampling slack: the timeline sees a change up to a second late.
      else if (lastUp !== undefined && c.at - lastUp < WINDOW - 1_000) out.push(`down ${c.from} → ${c.to} at ${c.at} ms, ${c.at - lastUp} ms after a scale-up`);
    }
    return out;
  }

  directionChanges(since = 0): number {
    let n = 0;
    let dir = 0;
    for (const c of this.changes.filter((x) => x.at >= since)) {
      const d = Math.sign(c.to - c.from);
      if (dir !== 0 && d !== dir) n++;
      dir = d;
    }
    return n;
  }
}

/**
 * sim-autoscale: three nodes, a service autoscaled between 2 and 8 toward 50% of its 250m
 * request, under synthetic load: flat on target, a step up, a step down, then noise (with a
 * machine lost and back, the store down, an agent restarted), and flat again to settle.
 */
export async function simAutoscale(opts: SimOptions): Promise<ScenarioResult> {
  const w = new SimWorld(opts);
  const notes: string[] = [];
  const rng = new Rng(opts.seed ^ 0x5ca1e);
  const tl = new Timeline();
  for (const [i, zone] of ['a', 'b', 'c'].entries()) w.addNode({ name: `node${i + 1}`, zone, cpuMillis: 2_000, memoryBytes: 4 * Gi });
  await w.runFor(3_000);
  await w.apply(web(MIN, { resources: { cpuMillis: REQUEST, memoryBytes: 128 * 1024 ** 2 }, autoscale: { min: MIN, max: MAX, targetCpuPercent: TARGET, scaleDownWindowMs: WINDOW } }));
  const onTarget = (MIN * REQUEST * TARGET) / 100;
  w.setLoad('web', curves.flat(onTarget));
  await tl.follow(w, 60_000);
  expectThat(w, tl.changes.length === 0 && (await running(w, 'web')).length === MIN, `a load on target keeps ${MIN} replicas`);

  // Step up: 3 or 4 times the load; scale-up acts at once (at most ×2 or +4 per step).
  const high = rng.pick([750, 1_000]);
  const upAt = w.t;
  w.setLoad('web', curves.step(onTarget, high, w.t));
  await tl.follow(w, 60_000);
  const upTo = ideal(high);
  expectThat(w, (await running(w, 'web')).length === upTo, `step up to ${high}m: converges to ${upTo} replicas (the count that puts it on target)`);
  const firstUp = tl.changes.find((c) => c.at >= upAt && c.to > c.from);
  expectThat(w, firstUp !== undefined && firstUp.at - upAt <= 30_000, 'the first scale-up within two sync periods of the step');

  // Step down: held for the window, then down to what the load needs.
  const low = rng.pick([250, 375]);
  const downAt = w.t;
  w.setLoad('web', curves.step(high, low, w.t));
  await tl.follow(w, WINDOW - 20_000);
  expectThat(w, (await running(w, 'web')).length === upTo, `step down: still ${upTo} replicas within the window`);
  await tl.follow(w, 60_000);
  const downTo = ideal(low);
  expectThat(w, (await running(w, 'web')).length === downTo, `step down to ${low}m: ${downTo} replicas after the window`);
  expectThat(w, tl.changes.some((c) => c.at >= downAt && c.to < c.from && c.at - downAt >= WINDOW), 'the scale-down came no sooner than the window');

  // Noise: ±30% around a level, a fresh value every 5 s, with faults in the middle: a machine
  // lost and back, the store down for 10 s, an agent restarted.
  const level = 500;
  const noiseAt = w.t;
  w.setLoad('web', curves.noisy(level, 0.3, opts.seed));
  await tl.follow(w, 90_000);
  w.powerOff('node3');
  await tl.follow(w, 60_000);
  w.powerOn('node3');
  await tl.follow(w, 30_000);
  w.setStoreDown(true);
  await tl.follow(w, 10_000);
  w.setStoreDown(false);
  await tl.follow(w, 20_000);
  w.killAgent('node1');
  await tl.follow(w, 5_000);
  w.restartAgent('node1');
  await tl.follow(w, 85_000);
  const noisyChanges = tl.changes.filter((c) => c.at >= noiseAt);
  const bound = 2 * Math.ceil(300_000 / WINDOW) + 2;
  expectThat(w, tl.directionChanges(noiseAt) <= bound, `noise: ${tl.directionChanges(noiseAt)} direction change(s) in 300 s, at most ${bound}`);
  notes.push(`noise: ${noisyChanges.map((c) => `${(c.at / 1000).toFixed(0)}s ${c.from}→${c.to}`).join(', ') || 'no changes'}`);

  // Flat again: settle on target, and a converged system writes nothing.
  w.setLoad('web', curves.flat(level));
  await tl.follow(w, WINDOW + 60_000);
  expectThat(w, (await running(w, 'web')).length === ideal(level), `flat ${level}m: settles at ${ideal(level)} replicas`);
  for (const f of tl.flapping()) w.violate('autoscale: no flapping', f);
  notes.push(`changes: ${tl.changes.map((c) => `${(c.at / 1000).toFixed(0)}s ${c.from}→${c.to}`).join(', ')}`);
  await w.checkQuiescent();
  return result('sim-autoscale', w, notes);
}
