// A synthetic cluster at scale (1,000 nodes, 10,000 replicas by default) for measuring the
// cluster map: valid facts (encoded through core/keys.ts, as the controllers and agents write
// them) in a MemoryStore, then a seeded stream of the changes a real cluster makes — agents
// reporting, a node lost and its replicas replaced and placed elsewhere, a scale-up waiting in
// the tray — each one store transaction, hence one watch batch. The map follows it exactly as
// it follows live mode (store watch → mirror → change feed). Used by test/web/map-perf.test.ts
// and bench/console.ts; not loaded by the console itself. (The simulation's real controllers
// do not reach this size in a browser tab: see docs/console.md.)
import { buildKey, encodeFact } from '/src/core/keys.js';
import { serviceSpecSchema } from '/src/core/model/service.js';
import { MemoryStore } from '/src/db/memory.js';
import { Rng } from '/src/jobs/sim/rng.js';
import { ChangeFeed } from './feed.js';
import { Mirror } from './mirror.js';
import { keep } from './live.js';

const Mi = 1024 ** 2;
const Gi = 1024 ** 3;
const put = (kind, params, value) => ({ put: { key: buildKey(kind, ...params), value: encodeFact(kind, value) } });

export class ScaleCluster {
  constructor({ nodes = 1_000, replicas = 10_000, services = 20, seed = 1 } = {}) {
    this.rng = new Rng(seed);
    this.store = new MemoryStore({ now: () => this.t });
    this.t = 1_000;
    this.n = nodes;
    this.r = replicas;
    this.feed = new ChangeFeed();
    this.mirror = new Mirror(0, []);
    this.specs = Array.from({ length: services }, (_, i) => serviceSpecSchema.parse({ name: `svc${i}`, image: 'web:1', replicas: Math.ceil(replicas / services), resources: { cpuMillis: 100, memoryBytes: 64 * Mi } }));
    this.nodes = Array.from({ length: nodes }, (_, i) => `node${i + 1}`);
    this.where = new Map(); // replica id → node
    this.on = new Map(this.nodes.map((n) => [n, new Set()]));
    this.tenure = new Map();
    this.lost = new Set();
    this.seq = 0;
    /** Per watch batch: { events, ms } where ms = applying it to the map, DOM included (set by `measure`). */
    this.batches = [];
  }

  /** Write the cluster (not measured), then follow the store as live mode follows the server. */
  async build() {
    const perNode = Math.ceil(this.r / this.n);
    let k = 0;
    for (const n of this.nodes) {
      const i = Number(n.slice(4));
      const r = await this.store.txn({ compare: [], success: [put('node', [n], { name: n, zone: 'abc'[i % 3], capacity: { cpuMillis: 4_000, memoryBytes: 16 * Gi } })] });
      this.tenure.set(n, r.revision);
      const ops = [put('nodeStatus', [n], { node: n, tenure: r.revision, state: 'ready', since: this.t })];
      for (let j = 0; j < perNode && k < this.r; j++, k++) {
        const spec = this.specs[k % this.specs.length];
        const id = `${spec.name}-${(this.seq++).toString(36).padStart(6, '0')}`;
        ops.push(this.record(id, spec), ...this.placement(id, spec, n, 'running', 'passing'));
      }
      await this.store.txn({ compare: [], success: ops });
      await this.allocation(n);
    }
    const head = await this.store.revision();
    const listed = await this.store.range({ prefix: '/', revision: head });
    this.mirror = new Mirror(head, listed.kvs.filter((kv) => keep(kv.key)));
    void this.follow(head + 1);
    return head;
  }

  facts() {
    return { revision: this.mirror.revision, kvs: this.mirror.kvs.values() };
  }

  async follow(from) {
    for await (const batch of this.store.watch({ prefix: '/', fromRevision: from })) {
      this.mirror.apply(batch, keep);
      const events = batch.events.filter((e) => keep(e.kv.key));
      if (!events.length) continue;
      const t0 = performance.now();
      this.feed.batch({ revision: batch.revision, events: batch.events, at: Date.now() }); // whole, as the sources hand it
      const t1 = performance.now();
      void this.layout?.(); // the map's style and layout, forced now so they are measured too
      this.batches.push({ events: events.length, ms: performance.now() - t0, scriptMs: t1 - t0 });
      this.delivered?.(batch.revision);
    }
  }

  /** Resolves once the map has been given everything written so far. */
  async settled() {
    const head = await this.store.revision();
    if (this.mirror.revision >= head) return;
    await new Promise((resolve) => (this.delivered = (rev) => rev >= head && resolve()));
  }

  record(id, spec, extra = {}) {
    return put('replica', [spec.name, id], { id, service: spec.name, specRevision: 1, template: '', desired: 'run', createdAt: this.t, ...extra });
  }

  /** The scheduler's assignment of a replica (and the agent's report of it, when `state`). */
  placement(id, spec, node, state, health) {
    const tenure = this.tenure.get(node);
    this.where.set(id, node);
    this.on.get(node).add(id);
    return [
      put('assigned', [node, id], { replica: id, service: spec.name, node, tenure, resources: spec.resources, specRevision: 1, spec, desired: 'run', placedAt: this.t }),
      ...(state ? [this.observation(node, id, state, health)] : []),
    ];
  }

  /** Placed (one batch: the assignment and the node's allocation), then reported running (another). */
  async place(id, spec, node) {
    const [assign] = this.placement(id, spec, node);
    await this.store.txn({ compare: [], success: [assign, this.allocationOp(node)] });
    await this.observe(node, [id], 'running');
  }

  observation(node, id, state, health = 'passing') {
    return put('observed', [node, id], { replica: id, service: id.split('-')[0], node, tenure: this.tenure.get(node), state, health: { liveness: 'passing', readiness: health }, at: this.t });
  }

  observe(node, ids, state, health = 'passing') {
    return this.store.txn({ compare: [], success: ids.map((id) => this.observation(node, id, state, health)) });
  }

  allocationOp(node) {
    const ids = [...this.on.get(node)];
    return put('allocation', [node], { node, tenure: this.tenure.get(node), used: { cpuMillis: ids.length * 100, memoryBytes: ids.length * 64 * Mi }, replicas: ids });
  }

  allocation(node) {
    return this.store.txn({ compare: [], success: [this.allocationOp(node)] });
  }

  pick(list) {
    return list[Math.floor(this.rng.next() * list.length)];
  }

  /** One round of changes; each awaited txn is one watch batch. */
  async churn() {
    this.t += 1_000;
    const ready = this.nodes.filter((n) => !this.lost.has(n));
    // An agent reports: its replicas' readiness flips (one batch of ~10 observations).
    const node = this.pick(ready);
    const ids = [...this.on.get(node)];
    await this.observe(node, ids, 'running', this.rng.next() < 0.5 ? 'failing' : 'passing');
    // A node is lost: its status (one batch), its replicas retired and replaced (one batch),
    // the replacements placed (one batch per replacement) and reported running on their nodes.
    const gone = this.pick(ready);
    this.lost.add(gone);
    await this.store.txn({ compare: [], success: [put('nodeStatus', [gone], { node: gone, tenure: this.tenure.get(gone), state: 'lost', since: this.t })] });
    const victims = [...this.on.get(gone)];
    const fresh = victims.map((old) => ({ old, spec: this.specs.find((s) => old.startsWith(`${s.name}-`)), id: '' }));
    for (const f of fresh) f.id = `${f.spec.name}-${(this.seq++).toString(36).padStart(6, '0')}`;
    await this.store.txn({
      compare: [],
      success: fresh.flatMap((f) => [
        this.record(f.old, f.spec, { retired: true, ended: { outcome: 'lost', node: gone } }),
        this.record(f.id, f.spec, { replaces: { replica: f.old, ended: { outcome: 'lost', node: gone } }, origin: { by: 'replacement' } }),
      ]),
    });
    for (const f of fresh) await this.place(f.id, f.spec, this.pick(ready.filter((n) => n !== gone)));
    // A scale-up of 20 that waits in the tray (one batch).
    const spec = this.pick(this.specs);
    await this.store.txn({ compare: [], success: Array.from({ length: 20 }, () => this.record(`${spec.name}-${(this.seq++).toString(36).padStart(6, '0')}`, spec)) });
    await this.settled();
  }
}

/**
 * Build the cluster, draw it in `el` and measure, per watch batch, the time from the batch
 * reaching the change feed to the map's DOM updated and laid out (median, p95, max, in ms).
 */
export async function measureMap(el, { nodes = 1_000, replicas = 10_000, rounds = 20, seed = 1 } = {}) {
  const { ClusterMap } = await import('./map.js');
  const c = new ScaleCluster({ nodes, replicas, seed });
  let t = performance.now();
  await c.build();
  const buildMs = performance.now() - t;
  const map = new ClusterMap(el, { source: c, flushEach: true });
  t = performance.now();
  map.follow(c.feed);
  map.show(true);
  void el.offsetHeight;
  const firstDrawMs = performance.now() - t;
  c.layout = () => el.offsetHeight;
  for (let i = 0; i < rounds; i++) await c.churn();
  const ms = c.batches.map((b) => b.ms).sort((a, b) => a - b);
  const script = c.batches.map((b) => b.scriptMs).sort((a, b) => a - b);
  const q = (p, xs = ms) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  return {
    nodes,
    replicas,
    chips: el.querySelectorAll('.chip').length,
    boxes: el.querySelectorAll('.mnode').length,
    batches: ms.length,
    eventsPerBatch: c.batches.reduce((a, b) => a + b.events, 0) / Math.max(1, ms.length),
    medianMs: q(0.5),
    p95Ms: q(0.95),
    maxMs: ms.at(-1),
    scriptMedianMs: q(0.5, script),
    scriptP95Ms: q(0.95, script),
    firstDrawMs,
    buildMs,
  };
}
