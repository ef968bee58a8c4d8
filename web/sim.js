// Simulation mode: the real controllers over a MemoryStore and simulated agents with the
// fake runtime, on virtual time, in this tab (jobs/sim/world.ts — the same SimWorld the
// deterministic simulation tests run). Nothing here talks to a server.
import { SimWorld, DEFAULT_IMAGES } from '/src/jobs/sim/world.js';
import { INVARIANTS } from '/src/jobs/sim/invariants.js';
import { why } from '/src/jobs/decisions/why.js';
import { parse } from '/src/core/lang/index.js';
import { h, patch } from './dom.js';
import { ChangeFeed } from './feed.js';
import { Mirror } from './mirror.js';
import { keep } from './live.js';

const Mi = 1024 ** 2;
const Gi = 1024 ** 3;

/** Fixtures in the .cca language, parsed here in the browser by core/lang (the CLI's parser). */
export const FIXTURES = {
  web: `service web {
  image      = "web:1"
  replicas   = 6
  cpu        = 250m
  memory     = 256Mi
  stop_grace = 2s
}
`,
  api: `service api {
  image      = "api:1"
  replicas   = 3
  cpu        = 500m
  memory     = 512Mi
  stop_grace = 2s
}
`,
  worker: `service worker {
  image      = "worker:1"
  replicas   = 2
  cpu        = 1
  memory     = 1Gi
  restart    = on-failure
  stop_grace = 5s
}
`,
  burn: `# Autoscaled on CPU: set its load below ("load") and watch the usage view.
service burn {
  image      = "burn:1"
  replicas   = 1
  cpu        = 250m
  memory     = 128Mi
  stop_grace = 2s
  autoscale {
    min               = 1
    max               = 4
    target_cpu        = 50%
    scale_down_window = 1m
  }
}
`,
  ghost: `# An image no node has: the replica stays pending, and says why.
service ghost {
  image    = "ghost:1"
  replicas = 1
}
`,
};

/** What every simulated node can run: the fixtures' images and a second web version to roll to (never ghost:1). */
const IMAGES = { ...DEFAULT_IMAGES, 'web:2': 'sha256:web2', 'burn:1': 'sha256:burn1' };
const NODES = [
  { name: 'node1', zone: 'a', cpuMillis: 2_000, memoryBytes: 4 * Gi, images: IMAGES },
  { name: 'node2', zone: 'b', cpuMillis: 2_000, memoryBytes: 4 * Gi, images: IMAGES },
  { name: 'node3', zone: 'c', cpuMillis: 2_000, memoryBytes: 4 * Gi, images: IMAGES },
];

const SPEEDS = [1, 5, 20, 100];
const FRAME_MS = 100;
const STEP_MS = 1_000;
const BOOT_MS = 3_000;

export class SimSource {
  constructor({ onChange, onState, panel, seed }) {
    this.onChange = onChange;
    this.onState = onState;
    this.panel = panel;
    this.speed = 5;
    this.playing = false;
    this.queue = Promise.resolve();
    this.applied = new Set();
    /** Every committed revision of the world's store, in order, for the views (web/feed.js). */
    this.feed = new ChangeFeed();
    void this.reset(seed);
  }

  get store() {
    return this.world.store;
  }

  /** The simulation's store as it was at `revision` (it is never compacted here): the scrubbed timeline reads it. */
  storeAt(revision) {
    const store = this.world.store;
    const at = (r) => (r ? Math.min(r, revision) : revision);
    return {
      revision: async () => revision,
      range: (req) => store.range({ ...req, revision: at(req.revision) }),
      get: (key, opts) => store.get(key, { revision: at(opts?.revision) }),
    };
  }

  /** CPU a service's replicas use together from now on (millicores, shared evenly), reported by the fake runtime as usage. */
  setLoad(service, millis) {
    return this.act(`load ${service} ${millis}m`, (w) => w.setLoad(service, () => millis));
  }

  now() {
    return this.world.t;
  }

  why(kind, name) {
    return this.exec(() => why(this.world.store, kind, name));
  }

  reset(seed) {
    this.seed = seed;
    this.world = new SimWorld({ seed, traceLimit: 2_000 });
    this.follow(this.world);
    this.nextNode = NODES.length + 1;
    this.applied?.clear();
    this.actions = [];
    for (const n of NODES) this.world.addNode(n);
    const u = new URL(location.href);
    u.searchParams.set('seed', String(seed));
    history.replaceState(null, '', u);
    this.renderPanel();
    this.changed();
    // The machines boot and their agents register before anyone applies anything.
    return this.advance(BOOT_MS);
  }

  /**
   * Follow the world's store as live mode follows the server's: every revision, in order,
   * into a mirror of the facts the views read, and onto the change feed — whole (decisions
   * and events too, which the mirror does not keep), stamped with the world's virtual time.
   * A new world is a `fresh` reset: what the views kept of the old one is gone.
   */
  follow(world) {
    this.following?.abort();
    const ac = new AbortController();
    this.following = ac;
    const mirror = (this.mirror = new Mirror(0, []));
    this.feed.reset({ fresh: true });
    void (async () => {
      for await (const batch of world.store.watch({ prefix: '', fromRevision: 1, signal: ac.signal })) {
        if (this.world !== world) return;
        mirror.apply(batch, keep);
        this.feed.batch({ revision: batch.revision, events: batch.events, at: world.t });
      }
    })().catch(() => undefined);
  }

  /** Every fact the views read, at the last revision followed (for the change feed's subscribers). */
  facts() {
    return { revision: this.mirror.revision, kvs: this.mirror.kvs.values() };
  }

  /** Everything that touches the world runs one at a time, between virtual-time chunks. */
  exec(fn) {
    const run = this.queue.then(fn);
    this.queue = run.then(() => undefined, () => undefined);
    return run;
  }

  act(label, fn) {
    return this.exec(async () => {
      this.actions.push(`t=${(this.world.t / 1000).toFixed(1)}s ${label}`);
      await fn(this.world);
      // Let the controllers react at this instant, as a real cluster would right away.
      await this.world.runFor(0);
      this.changed();
    }).catch((e) => this.world.log(`${label} failed: ${e?.message ?? e}`));
  }

  play(on = !this.playing) {
    this.playing = on;
    this.renderPanel();
    this.onState({ state: 'sim', t: this.world.t, playing: on, seed: this.seed });
    if (on) void this.loop();
  }

  async loop() {
    while (this.playing && this.world.violations.length === 0) {
      const started = performance.now();
      await this.advance((FRAME_MS * this.speed));
      const spent = performance.now() - started;
      await new Promise((r) => setTimeout(r, Math.max(0, FRAME_MS - spent)));
    }
    if (this.playing) this.play(false);
  }

  advance(ms) {
    return this.exec(async () => {
      await this.world.runFor(ms);
      this.changed();
    });
  }

  /** Run until `pred(world)` holds or `maxMs` of virtual time passed (tests, and the "settle" button). */
  async runUntil(pred, maxMs = 120_000, chunk = 1_000) {
    const end = this.world.t + maxMs;
    while (this.world.t < end && this.world.violations.length === 0) {
      if (await this.exec(() => pred(this.world))) return true;
      await this.advance(chunk);
    }
    return this.exec(() => pred(this.world));
  }

  changed() {
    const w = this.world;
    this.onState({ state: 'sim', t: w.t, playing: this.playing, seed: this.seed, revision: undefined });
    this.renderStatus();
    this.onChange();
  }

  nodeActions(n) {
    const a = this.world.agents.get(n.name);
    if (!a) return '';
    const cut = this.world.partitions.has(n.name);
    const off = !a.alive;
    return h('span.actions', {},
      h('button', { 'data-act': 'kill', 'data-node': n.name, disabled: off }, 'kill node'),
      h('button', { 'data-act': 'partition', 'data-node': n.name }, cut ? 'heal partition' : 'partition'),
      h('button', { 'data-act': 'restart', 'data-node': n.name }, off ? 'power on' : 'restart agent'));
  }

  /** Parse .cca text as `cca apply` would, and apply its services if it has no diagnostics. */
  applyCca(text, filename) {
    const { services, diagnostics } = parse(text, filename);
    const list = this.panel.querySelector('#cca-diagnostics');
    patch(list, ...diagnostics.map((d) => h('li', {}, `${d.code} ${d.span ? `${d.span.file ?? filename}:${d.span.line}:${d.span.col} ` : ''}${d.message}`)));
    if (diagnostics.length || services.length === 0) {
      this.panel.querySelector('#cca-editor').open = true;
      return Promise.resolve();
    }
    for (const s of services) this.applied.add(s.name);
    return this.act(`apply ${services.map((s) => s.name).join(', ')}`, async (w) => {
      for (const s of services) await w.apply(s);
    });
  }

  onNodeAction(act, node) {
    const a = this.world.agents.get(node);
    if (act === 'kill') return this.act(`kill ${node}`, (w) => w.powerOff(node));
    if (act === 'partition') return this.act(`${this.world.partitions.has(node) ? 'heal' : 'partition'} ${node}`, (w) => w.partition(node, !w.partitions.has(node)));
    if (act === 'restart') return this.act(`${a && !a.alive ? 'power on' : 'restart agent'} ${node}`, (w) => (a && !a.alive ? w.powerOn(node) : w.restartAgent(node)));
  }

  renderPanel() {
    const p = this.panel;
    p.hidden = false;
    if (!p.dataset.built) {
      p.dataset.built = '1';
      const fixtures = Object.keys(FIXTURES).map((f) => h('button', { 'data-fixture': f, title: FIXTURES[f] }, `apply ${f}`));
      p.append(
        h('div.controls', {},
          h('button#play', { onclick: () => this.play() }, 'play'),
          h('button#step', { onclick: () => this.advance(STEP_MS), title: 'advance one virtual second' }, 'step 1s'),
          h('label', {}, 'speed ', h('select#speed', { onchange: (e) => (this.speed = Number(e.target.value)) }, SPEEDS.map((s) => h('option', { value: s, selected: s === this.speed }, `${s}×`)))),
          h('label', {}, 'seed ', h('input#seed', { type: 'number', value: this.seed, min: 0, step: 1 })),
          h('button#reseed', { onclick: () => { this.play(false); void this.exec(() => { void this.reset(Number(p.querySelector('#seed').value) || 0); }); } }, 'restart with seed'),
          h('span#vclock.vclock')),
        h('div.controls', {},
          ...fixtures,
          h('label', {}, 'scale ', h('select#scale-service'), h('input#scale-n', { type: 'number', value: 4, min: 0, max: 50 })),
          h('button#scale', { onclick: () => { const s = p.querySelector('#scale-service').value; const n = Number(p.querySelector('#scale-n').value); if (s) void this.act(`scale ${s} ${n}`, (w) => w.scale(s, n)); } }, 'scale'),
          h('label', {}, 'load ', h('input#load-m', { type: 'number', value: 400, min: 0, step: 50, title: 'millicores the selected service uses in all' }), 'm'),
          h('button#load', { onclick: () => { const s = p.querySelector('#scale-service').value; if (s) void this.setLoad(s, Number(p.querySelector('#load-m').value) || 0); } }, 'set load'),
          h('button#add-node', { onclick: () => { const name = `node${this.nextNode++}`; void this.act(`add ${name}`, (w) => w.addNode({ name, zone: 'abc'[(this.nextNode - 2) % 3], cpuMillis: 2_000, memoryBytes: 4 * Gi, images: IMAGES })); } }, 'add node')),
        h('details#cca-editor.cca', {},
          h('summary', {}, 'write .cca'),
          h('textarea#cca-text', { rows: 9, cols: 60, spellcheck: 'false' }, FIXTURES.web),
          h('div', {}, h('button#cca-apply', { onclick: () => void this.applyCca(p.querySelector('#cca-text').value, 'console.cca') }, 'apply .cca')),
          h('ul#cca-diagnostics.diagnostics')),
        h('div#invariants.invariants'),
        h('details.trace', {}, h('summary', {}, 'trace'), h('pre#trace')));
      p.addEventListener('click', (e) => {
        const f = e.target.closest('[data-fixture]')?.dataset.fixture;
        if (!f) return;
        p.querySelector('#cca-text').value = FIXTURES[f];
        void this.applyCca(FIXTURES[f], `${f}.cca`);
      });
    }
    p.querySelector('#play').textContent = this.playing ? 'pause' : 'play';
    p.querySelector('#seed').value = String(this.seed);
  }

  renderStatus() {
    const w = this.world;
    const p = this.panel;
    p.querySelector('#vclock').textContent = `t = ${(w.t / 1000).toFixed(1)}s · ${w.stats.steps} steps`;
    const names = [...this.applied].sort();
    const sel = p.querySelector('#scale-service');
    if (sel.options.length !== names.length) patch(sel, ...names.map((n) => h('option', { value: n }, n)));
    const inv = p.querySelector('#invariants');
    const v = w.violations[0];
    inv.dataset.ok = v ? 'false' : 'true';
    if (v) {
      patch(inv, h('strong', {}, `INVARIANT VIOLATED: ${v.invariant} at ${(v.at / 1000).toFixed(3)}s — seed ${this.seed}`), h('div', {}, v.detail),
        h('div', {}, `Replay: open /?sim=1&seed=${this.seed} and repeat these actions at these virtual times: ${this.actions.join('; ') || '(none)'}.`));
    } else {
      patch(inv, h('strong', {}, `invariants hold (checked after every step, ${w.stats.steps} steps)`), ' ',
        h('span.list', {}, Object.values(INVARIANTS).filter((n) => !['lost-replaced', 'eventually-running', 'decision-chains', 'converged-writes-nothing'].includes(n)).join(' · ')));
    }
    const trace = p.querySelector('#trace');
    if (trace.closest('details').open) trace.textContent = w.trace.slice(-300).join('\n');
  }
}
