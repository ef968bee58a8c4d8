// The cluster map: every node a box (zone, state, CPU and memory allocation bars), every
// replica a chip inside its node coloured by state and health, pending replicas in a tray
// with their reason, a lost node greyed with its lost replicas as ghosts saying where their
// replacements went. It follows the source's change feed (web/feed.js) and updates in place:
// one DOM element per node and per replica, keyed by name/id, and each flush (at most one per
// animation frame) touches only what the batches since the last one changed.
import { ClusterModel } from './cluster-model.js';
import { matches, isEmpty, sameFilter } from './filter.js';
import { h, bytes } from './dom.js';

const TRAY_SHOWN = 100;
// The node box's geometry (console.css: .mnode is 150 px wide, chips 11 px with a 2 px gap).
const CHIPS_PER_ROW = 10;
const CHIP_ROW_PX = 13;
const BOX_BASE_PX = 36;
const MOVES_PX = 15; // per line of "moved → …", about MOVES_CHARS characters each
const MOVES_CHARS = 24;
const TIMINGS_KEPT = 5_000;

export class ClusterMap {
  /**
   * `reasons`: the pending-reason cache (web/pending.js); optional. `flushEach`: draw each batch
   * as it arrives instead of once per animation frame (the performance test measures per batch).
   */
  constructor(el, { source, reasons, flushEach = false } = {}) {
    this.el = el;
    this.flushEach = flushEach;
    this.source = source;
    this.reasons = reasons;
    this.model = new ClusterModel();
    this.nodeEls = new Map();
    this.chipEls = new Map(); // replica id → { el, sig, node, tray }
    this.zoneEls = new Map();
    this.ghostsOn = new Map(); // node → Set of ghost ids
    this.tray = new Set();
    this.services = new Map(); // service → hue
    this.counts = new Map(); // service → { all, running } over the chips drawn (ghosts not counted)
    this.filter = { text: '', service: '', node: '', replica: '', state: '' };
    this.visible = false;
    this.scheduled = false;
    /** The duration of each flush in ms, with how much it touched (read by the performance test). */
    this.timings = [];
    this.build();
  }

  build() {
    this.trayEl = h('div.map-tray', {}, h('h3', {}, 'pending ', h('span.count', {}, '0')), h('ul.tray-list'));
    this.legendEl = h('div.map-legend');
    this.zonesEl = h('div.map-zones');
    this.emptyEl = h('p.empty', {}, 'No nodes registered.');
    this.el.replaceChildren(h('div.map-bar', {}, this.legendEl), this.trayEl, this.emptyEl, this.zonesEl);
  }

  /** Follow `feed`, starting from the source's facts at one revision. */
  follow(feed) {
    this.unfollow?.();
    this.reload();
    this.unfollow = feed.subscribe((c) => {
      if (c.type === 'reset') this.reload();
      else if (!this.model.apply(c.batch)) return;
      if (this.flushEach && this.visible) this.flush();
      else this.schedule();
    });
  }

  reload() {
    const facts = this.source.facts();
    if (facts) this.model.load(facts.revision, facts.kvs);
    else this.model.clear();
    this.schedule();
  }

  show(on) {
    this.visible = on;
    if (on) this.flush();
  }

  schedule() {
    if (this.scheduled || !this.visible) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      if (this.visible) this.flush();
    });
  }

  setFilter(f) {
    const same = sameFilter(this.filter, f);
    this.filter = { ...f };
    if (!same) this.refilter();
  }

  /** Apply what changed since the last flush to the DOM. */
  flush() {
    const t0 = performance.now();
    const d = this.model.take();
    const touched = new Set();
    if (d.all) {
      for (const id of [...this.chipEls.keys()]) this.dropChip(id, touched);
      for (const n of this.nodeNamesSorted()) d.nodes.add(n);
      for (const name of this.nodeEls.keys()) d.nodes.add(name);
      for (const id of this.model.records.keys()) d.replicas.add(id);
    }
    for (const name of d.nodes) this.syncNode(name, touched);
    let trayChanged = false;
    for (const id of d.replicas) trayChanged = this.syncChip(id, touched) || trayChanged;
    if (trayChanged || d.all) this.renderTray();
    for (const name of touched) this.nodeVisibility(name);
    this.zoneVisibility(d.all || d.nodes.size > 0 ? undefined : touched);
    if (d.nodes.size || d.replicas.size) this.renderLegend();
    this.emptyEl.hidden = this.nodeEls.size > 0;
    const ms = performance.now() - t0;
    if (d.nodes.size || d.replicas.size) {
      this.timings.push({ ms, replicas: d.replicas.size, nodes: d.nodes.size });
      if (this.timings.length > TIMINGS_KEPT) this.timings.splice(0, this.timings.length - TIMINGS_KEPT);
    }
    this.el.dataset.revision = String(this.model.revision);
  }

  nodeNamesSorted() {
    return [...this.model.nodeNames()].sort(byName);
  }

  // ── nodes ──────────────────────────────────────────────────────────────────────

  syncNode(name, touched) {
    const n = this.model.node(name);
    let box = this.nodeEls.get(name);
    if (!n) {
      if (box) {
        box.el.remove();
        this.nodeEls.delete(name);
        for (const [id, c] of this.chipEls) if (c.node === name) this.dropChip(id, touched);
        this.ghostsOn.delete(name);
      }
      return;
    }
    // A node whose record left with its lease keeps the zone it had.
    const zone = n.zone || box?.zone || '';
    if (!box) box = this.addNode(name, zone);
    else if (box.zone !== zone) this.placeNode(box, zone);
    const state = n.registered ? n.state : n.state === 'lost' ? 'lost' : 'gone';
    const cpu = pct(n.used.cpuMillis, n.capacity.cpuMillis);
    const mem = pct(n.used.memoryBytes, n.capacity.memoryBytes);
    const sig = `${state}|${zone}|${cpu}|${mem}|${n.used.cpuMillis}|${n.used.memoryBytes}|${n.capacity.cpuMillis}|${n.capacity.memoryBytes}`;
    if (box.sig !== sig) {
      box.sig = sig;
      box.state = state;
      box.el.dataset.state = state;
      box.stateEl.textContent = state;
      box.zoneEl.textContent = zone || '—';
      box.cpu.style.width = `${cpu}%`;
      box.mem.style.width = `${mem}%`;
      box.cpu.parentElement.title = `cpu ${n.used.cpuMillis}m of ${n.capacity.cpuMillis}m allocated`;
      box.mem.parentElement.title = `memory ${bytes(n.used.memoryBytes)} of ${bytes(n.capacity.memoryBytes)} allocated`;
    }
    touched.add(name);
  }

  addNode(name, zone) {
    const cpu = h('span.fill');
    const mem = h('span.fill');
    const stateEl = h('span.nstate');
    const zoneEl = h('span.nzone');
    const chips = h('div.chips');
    const moves = h('div.moves');
    const el = h('div.mnode', { dataset: { node: name } },
      h('div.mhead', {}, h('a.why', { href: `#why/node/${encodeURIComponent(name)}`, title: `why node ${name}` }, name), zoneEl, stateEl),
      h('div.mbars', {}, h('span.mbar.cpu', {}, cpu), h('span.mbar.mem', {}, mem)),
      chips, moves);
    const box = { el, cpu, mem, stateEl, zoneEl, chips, moves, zone: undefined, sig: '', state: '' };
    this.nodeEls.set(name, box);
    this.placeNode(box, zone);
    return box;
  }

  placeNode(box, zone) {
    box.zone = zone;
    const list = this.zoneList(zone || '—');
    const name = box.el.dataset.node;
    let before = null;
    // Nodes arrive mostly in order: look from the end.
    for (let c = list.lastElementChild; c; c = c.previousElementSibling) {
      if (byName(c.dataset.node, name) < 0) break;
      before = c;
    }
    list.insertBefore(box.el, before);
  }

  zoneList(zone) {
    let z = this.zoneEls.get(zone);
    if (!z) {
      const list = h('div.zone-nodes');
      z = { el: h('section.zone', { dataset: { zone } }, h('h3', {}, `zone ${zone}`), list), list };
      this.zoneEls.set(zone, z);
      const after = [...this.zoneEls.keys()].sort().filter((k) => k > zone).map((k) => this.zoneEls.get(k).el).find((e) => e.isConnected);
      this.zonesEl.insertBefore(z.el, after ?? null);
    }
    return z.list;
  }

  // ── replicas ───────────────────────────────────────────────────────────────────

  /** @returns whether the tray's membership or content changed */
  syncChip(id, touched) {
    const r = this.model.replica(id);
    const chip = this.chipEls.get(id);
    if (!r || (r.at !== 'tray' && !this.nodeEls.has(r.at === 'ghost' ? r.ghostOf : r.view.node))) {
      return chip ? this.dropChip(id, touched) : false;
    }
    const v = r.view;
    const node = r.at === 'ghost' ? r.ghostOf : r.at === 'node' ? v.node : undefined;
    const health = v.health ? (v.health.liveness === 'failing' ? 'dead' : v.health.readiness === 'failing' ? 'unready' : v.health.readiness === 'passing' ? 'ready' : '') : '';
    const cls = `chip s-${r.at === 'ghost' ? 'ghost' : v.state}${health ? ` h-${health}` : ''}${r.replaces ? ' moved' : ''}`;
    const title = r.at === 'ghost'
      ? `${id} (${v.service}) lost with ${r.ghostOf}${r.replacedBy ? ` → ${r.replacedBy}${r.movedTo ? ` on ${r.movedTo}` : ' (pending)'}` : ''}`
      : `${id} (${v.service}) ${v.state}${node ? ` on ${node}` : ''}${v.health ? ` · live ${v.health.liveness} · ready ${v.health.readiness}` : ''}${v.restarts ? ` · ${v.restarts} restarts` : ''}${r.replaces ? ` · replaces ${r.replaces}` : ''}`;
    const sig = `${cls}|${title}|${node ?? ''}|${r.movedTo ?? ''}|${r.at === 'tray' ? v.diagnostic?.message ?? v.reason : ''}`;
    let c = chip;
    if (!c) {
      const el = h('a', { href: `#why/replica/${encodeURIComponent(id)}`, 'data-nav': '', dataset: { id, service: v.service } });
      el.style.setProperty('--svc', this.hue(v.service));
      c = { el, sig: '', node: undefined, tray: false, service: v.service, state: '', fields: undefined };
      this.chipEls.set(id, c);
    }
    if (c.sig === sig) return false;
    c.sig = sig;
    c.el.className = cls;
    c.el.title = title;
    this.count(c, -1);
    c.state = r.at === 'ghost' ? 'lost' : v.state;
    c.counted = r.at !== 'ghost';
    this.count(c, +1);
    if (r.replaces) c.el.dataset.replaces = r.replaces;
    else delete c.el.dataset.replaces;
    if (r.movedTo) c.el.dataset.movedTo = r.movedTo;
    else delete c.el.dataset.movedTo;
    c.fields = { service: v.service, replica: id, state: c.state, node };
    c.createdAt = v.createdAt ?? 0;
    c.reason = v.diagnostic?.message ?? (v.reason || 'not placed yet');
    c.el.classList.toggle('out', !this.chipMatches(c));
    const wasTray = c.tray;
    if (node !== c.node || (r.at === 'tray') !== c.tray || (r.at === 'ghost') !== c.ghost) {
      if (c.node) {
        touched.add(c.node);
        this.ghostsOn.get(c.node)?.delete(id);
      }
      c.node = node;
      c.ghost = r.at === 'ghost';
      c.tray = r.at === 'tray';
      if (c.tray) {
        this.tray.add(id);
        c.el.remove();
      } else {
        this.tray.delete(id);
        this.insertChip(this.nodeEls.get(node).chips, c.el, v.service, id, c.ghost);
        if (c.ghost) this.ghostSet(node).add(id);
      }
    }
    if (node) {
      touched.add(node);
      if (c.ghost) this.renderMoves(node);
    }
    return c.tray || wasTray;
  }

  dropChip(id, touched) {
    const c = this.chipEls.get(id);
    if (!c) return false;
    c.el.remove();
    this.chipEls.delete(id);
    this.count(c, -1);
    if (c.node) {
      touched.add(c.node);
      if (this.ghostsOn.get(c.node)?.delete(id)) this.renderMoves(c.node);
    }
    this.tray.delete(id);
    return c.tray;
  }

  /** Chips in a node: by service, then id; ghosts after the live ones. */
  insertChip(list, el, service, id, ghost) {
    const key = `${ghost ? 1 : 0}\u0000${service}\u0000${id}`;
    let before = null;
    for (const c of list.children) {
      const k = `${c.classList.contains('s-ghost') && c !== el ? 1 : 0}\u0000${c.dataset.service}\u0000${c.dataset.id}`;
      if (c !== el && k > key) {
        before = c;
        break;
      }
    }
    if (el.parentElement !== list || el.nextElementSibling !== before) list.insertBefore(el, before);
  }

  ghostSet(node) {
    let s = this.ghostsOn.get(node);
    if (!s) this.ghostsOn.set(node, (s = new Set()));
    return s;
  }

  /** Under a lost node: where its replicas went ("→ node3 ×2 · pending ×1"). */
  renderMoves(node) {
    const box = this.nodeEls.get(node);
    if (!box) return;
    const to = new Map();
    for (const id of this.ghostsOn.get(node) ?? []) {
      const dest = this.chipEls.get(id)?.el.dataset.movedTo ?? 'pending';
      to.set(dest, (to.get(dest) ?? 0) + 1);
    }
    box.moves.textContent = to.size ? `moved → ${[...to].sort().map(([n, k]) => `${n} ×${k}`).join(', ')}` : '';
  }

  renderTray() {
    const ids = [...this.tray].map((id) => ({ id, c: this.chipEls.get(id) })).filter((x) => x.c).sort((a, b) => (a.c.service < b.c.service ? -1 : a.c.service > b.c.service ? 1 : a.c.createdAt - b.c.createdAt || (a.id < b.id ? -1 : 1)));
    const shown = ids.slice(0, TRAY_SHOWN);
    this.reasons?.want(shown.map((x) => x.id));
    this.trayEl.querySelector('.count').textContent = String(ids.length);
    this.trayEl.hidden = ids.length === 0;
    const list = this.trayEl.querySelector('.tray-list');
    list.replaceChildren(...shown.map(({ id, c }) => h('li', { dataset: { id } }, c.el, ' ', h('a.why', { href: `#why/replica/${encodeURIComponent(id)}` }, id), h('span.reason', {}, `: ${this.reasons?.text(id) ?? c.reason}`))), ids.length > shown.length ? h('li.more', {}, `and ${ids.length - shown.length} more`) : '');
  }

  /** The pending-reason cache learned something: redraw the tray. */
  reasonsChanged() {
    if (this.visible) this.renderTray();
  }

  count(c, sign) {
    if (!c.counted) return;
    const k = this.counts.get(c.service) ?? { all: 0, running: 0 };
    k.all += sign;
    if (c.state === 'running') k.running += sign;
    if (k.all === 0) this.counts.delete(c.service);
    else this.counts.set(c.service, k);
    this.legendDirty = true;
  }

  renderLegend() {
    if (!this.legendDirty && this.legendEl.childElementCount) return;
    this.legendDirty = false;
    const counts = this.counts;
    const sig = JSON.stringify([this.nodeEls.size, ...[...counts].sort()]);
    if (sig === this.legendSig) return;
    this.legendSig = sig;
    this.legendEl.replaceChildren(
      h('span.legend-title', {}, `${this.nodeEls.size} nodes · ${[...counts.values()].reduce((a, k) => a + k.all, 0)} replicas`),
      ...[...counts].sort(([a], [b]) => a.localeCompare(b)).map(([s, k]) => {
        const el = h('a.legend-service', { href: '#', dataset: { service: s }, title: `show only ${s}` }, h('span.swatch'), `${s} ${k.running}/${k.all}`);
        el.style.setProperty('--svc', this.hue(s));
        return el;
      }),
      h('span.legend-states', {}, ...['running', 'starting', 'pending', 'failed', 'ghost'].map((s) => h('span', {}, h(`span.chip.s-${s}`), s === 'ghost' ? 'lost (moved)' : s))));
  }

  hue(service) {
    let hue = this.services.get(service);
    if (hue === undefined) {
      let x = 0;
      for (const ch of service) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
      hue = `hsl(${x % 360} 55% 45%)`;
      this.services.set(service, hue);
    }
    return hue;
  }

  // ── filter ─────────────────────────────────────────────────────────────────────

  chipMatches(c) {
    return !c.fields || matches(this.filter, { ...c.fields, zone: c.node ? this.nodeEls.get(c.node)?.zone : undefined });
  }

  nodeVisibility(name) {
    const box = this.nodeEls.get(name);
    if (!box) return;
    let show = isEmpty(this.filter);
    if (!show && !this.filter.service) show = matches(this.filter, { node: name, zone: box.zone, state: box.state });
    if (!show) show = box.chips.querySelector('.chip:not(.out)') !== null;
    box.el.hidden = !show;
    // A box's size is set here, from its chip count, so it is a layout boundary (contain:
    // strict in console.css): a chip changing inside does not lay out the other 999 boxes.
    const rows = Math.max(1, Math.ceil(box.chips.childElementCount / CHIPS_PER_ROW));
    const height = BOX_BASE_PX + rows * CHIP_ROW_PX + Math.ceil(box.moves.textContent.length / MOVES_CHARS) * MOVES_PX;
    if (box.height !== height) {
      box.height = height;
      box.el.style.height = `${height}px`;
    }
  }

  /** A zone shows while one of its boxes does (`nodes`: only the zones of these nodes). */
  zoneVisibility(nodes) {
    const zones = nodes ? new Set([...nodes].map((n) => this.nodeEls.get(n)?.zone || '—')) : this.zoneEls.keys();
    for (const zone of zones) {
      const z = this.zoneEls.get(zone);
      if (z) z.el.hidden = z.list.querySelector('.mnode:not([hidden])') === null;
    }
  }

  refilter() {
    for (const c of this.chipEls.values()) c.el.classList.toggle('out', !this.chipMatches(c));
    for (const name of this.nodeEls.keys()) this.nodeVisibility(name);
    this.zoneVisibility();
  }
}

function pct(a, b) {
  return b > 0 ? Math.min(100, Math.round((a / b) * 100)) : 0;
}

/** node2 before node10. */
function byName(a, b) {
  return a.localeCompare(b, 'en', { numeric: true });
}
