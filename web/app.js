// The console's entry: picks the mode (live, or the simulation with ?sim=1), registers the
// views with the shell (web/shell.js: routing, search, keyboard) and tells it when the
// source's data changed.
import { LiveSource } from './live.js';
import { readViews, filterViews, renderServices, renderReplicas, renderNodes, renderWhy } from './views.js';
import { clock } from './dom.js';
import { LogView } from './logs.js';
import { changed, currentRoute, registerView, start } from './shell.js';
import { PendingReasons } from './pending.js';
import { ClusterMap } from './map.js';
import { createTimelineView } from './timeline.js';
import { createUsageView } from './usage.js';
import { createRolloutView } from './rollout.js';

const $ = (s) => document.querySelector(s);
const params = new URLSearchParams(location.search);
const simMode = params.get('sim') === '1';
const ui = { why: undefined, whyAnswer: undefined, whyError: undefined, views: undefined, map: undefined, history: {} };

let source;
let logView;
let reasons;

// ── the tables and the history views: read the status views at one revision and draw the
// one shown (the map does not pay for them; it follows the change feed) ───────────────────

let rendering = false;
let again = false;

/** Read the status views, then `draw(views, now)` (one read at a time; a call meanwhile reads again after). */
async function withViews(draw) {
  if (rendering) {
    again = true;
    return;
  }
  rendering = true;
  try {
    if (!source?.store) return;
    ui.views = await readViews(source.store);
    const now = source.now();
    explainPending(ui.views.services);
    draw(ui.views, now);
    document.body.dataset.services = String(ui.views.services.length);
  } catch (e) {
    console.error(e);
  } finally {
    rendering = false;
    if (again) {
      again = false;
      changed();
    }
  }
}

/** The scheduler's own reason for each pending replica (asked through `why`, web/pending.js). */
function explainPending(services) {
  reasons.want(services.flatMap((s) => s.pending.map((p) => p.replica)));
  for (const s of services) for (const p of s.pending) p.reason = reasons.text(p.replica) ?? p.reason;
}

function renderTables(ctx) {
  return withViews((views, now) => {
    const shown = filterViews(views, ctx.filter);
    renderServices($('#view-services'), shown);
    renderReplicas($('#view-replicas'), shown);
    renderNodes($('#view-nodes'), { ...shown, now, actions: simMode ? (n) => source.nodeActions(n) : undefined });
  });
}

/**
 * Every view, registered with the shell once the source exists (the history views follow its
 * change feed from the start, whichever view is open, to keep the session's history).
 */
function registerViews() {
  const table = (id, title, key) => ({ id, title, key, update: (ctx) => void renderTables(ctx) });
  registerView(table('services', 'services', 's'));
  registerView(table('replicas', 'replicas', 'r'));
  registerView(table('nodes', 'nodes', 'n'));
  registerView({
    id: 'map',
    title: 'map',
    key: 'm',
    mount(el, ctx) {
      ui.map = new ClusterMap(el, { source: ctx.source, reasons });
      ui.map.follow(ctx.source.feed);
    },
    update(ctx) {
      if (ui.map.source !== ctx.source) return;
      ui.map.setFilter(ctx.filter);
      ui.map.show(true);
    },
    hide() {
      ui.map?.show(false);
    },
  });
  registerHistoryViews();
  registerView({
    id: 'why',
    title: 'why',
    key: 'w',
    update(ctx) {
      const [kind, name] = ctx.args;
      if (kind && name && (ui.why?.kind !== kind || ui.why?.name !== name)) void loadWhy(kind, name);
      else renderWhy($('#view-why'), ui.why, ui.whyAnswer, ui.whyError);
    },
  });
  registerView({
    id: 'logs',
    title: 'logs',
    key: 'l',
    update: (ctx) => logView?.show(ctx.args[0]),
    hide: () => logView?.stop(),
  });
}

/**
 * The history views (timeline, usage, rollouts): each keeps its log from the source's change
 * feed (web/feed.js) from the start, and draws it, filtered by the search, when shown. Their
 * sections exist before they are first shown: the views are created with them.
 */
function registerHistoryViews() {
  const backfill = simMode ? undefined : async (prefix) => (await source.getJson(`/v1/state?${new URLSearchParams({ prefix, limit: '1000' })}`)).kvs;
  const history = (id, title, key, create) => {
    const el = document.createElement('section');
    el.className = 'view';
    el.id = `view-${id}`;
    el.dataset.view = id;
    el.hidden = true;
    $('main').append(el);
    const view = create(el, { source, backfill, onChange: () => currentRoute().view === id && changed() });
    ui.history[id] = view;
    registerView({ id, title, key, update: (ctx) => void withViews((views, now) => view.update({ views, now }, ctx.filter)) });
  };
  history('timeline', 'timeline', 't', createTimelineView);
  history('usage', 'usage', 'u', createUsageView);
  history('rollouts', 'rollouts', 'o', createRolloutView);
}

// ── the header ─────────────────────────────────────────────────────────────────────

function showState(s) {
  const el = $('#conn');
  el.dataset.state = s.state;
  if (s.state === 'live') el.textContent = 'live';
  else if (s.state === 'connecting') el.textContent = 'connecting…';
  else if (s.state === 'reconnecting') {
    el.textContent = `reconnecting in ${Math.ceil(s.inMs / 1000)}s · stale since ${clock(s.staleSince)}`;
    el.title = s.reason ?? '';
  } else if (s.state === 'auth') {
    el.textContent = 'needs a token to read';
    $('#auth').hidden = false;
    $('#token').focus();
  } else if (s.state === 'sim') {
    el.textContent = `simulation · ${s.playing ? 'running' : 'paused'} · seed ${s.seed}`;
    if (source?.world?.violations.length) el.dataset.state = 'violated';
  }
  document.body.classList.toggle('stale', s.state === 'reconnecting');
  $('#revision').textContent = s.revision ? `rev ${s.revision}` : '';
  if (simMode) showViolation();
}

function showViolation() {
  const v = source?.world?.violations[0];
  const b = $('#banner');
  b.hidden = !v;
  if (v) b.textContent = `Invariant violated: ${v.invariant} at t=${(v.at / 1000).toFixed(3)}s (seed ${source.seed}): ${v.detail}`;
}

async function loadWhy(kind, name) {
  ui.why = { kind, name };
  ui.whyAnswer = undefined;
  ui.whyError = undefined;
  renderWhy($('#view-why'), ui.why);
  try {
    ui.whyAnswer = await source.why(kind, name);
  } catch (e) {
    ui.whyError = e?.message ?? String(e);
  }
  if (ui.why?.kind === kind && ui.why?.name === name) renderWhy($('#view-why'), ui.why, ui.whyAnswer, ui.whyError);
}

/** A clicked row stays selected across updates (rows are keyed, never rebuilt). */
function selectRows() {
  document.querySelector('main').addEventListener('click', (e) => {
    const tr = e.target.closest('tbody tr');
    if (!tr || e.target.closest('a, button')) return;
    const t = tr.closest('table');
    for (const other of t.querySelectorAll('tr.selected')) if (other !== tr) other.classList.remove('selected');
    tr.classList.toggle('selected');
  });
}

function wireAuth(live) {
  const form = $('#auth');
  form.hidden = false;
  $('#token').value = live.token ? '••••••••' : '';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('#token').value.trim();
    if (t && t !== '••••••••') live.setToken(t);
    $('#token').value = live.token ? '••••••••' : '';
    live.reload(); // list again with the new credentials
  });
  $('#forget').addEventListener('click', () => {
    live.setToken('');
    $('#token').value = '';
  });
}

async function main() {
  $('#mode').textContent = simMode ? 'simulation' : 'live';
  document.body.dataset.mode = simMode ? 'sim' : 'live';
  selectRows();
  $('main').addEventListener('click', (e) => {
    if (e.target.closest('#view-why button[data-act=refresh-why]') && ui.why) void loadWhy(ui.why.kind, ui.why.name);
    const legend = e.target.closest('#view-map a.legend-service');
    if (legend) {
      e.preventDefault();
      const search = $('#search');
      search.value = `service:${legend.dataset.service}`;
      search.dispatchEvent(new Event('input'));
    }
  });
  if (simMode) {
    const { SimSource } = await import('./sim.js');
    const seed = Number(params.get('seed') ?? Math.floor(Math.random() * 1e6));
    source = new SimSource({ onChange: changed, onState: showState, panel: $('#sim'), seed });
  } else {
    source = new LiveSource({ onChange: changed, onState: showState });
  }
  reasons = new PendingReasons(source, () => {
    changed();
    ui.map?.reasonsChanged();
  });
  // The views' sections exist from here on; the history views follow the feed from here on.
  registerViews();
  logView = new LogView($('#view-logs'), simMode ? undefined : (extra) => source.headers(extra));
  if (simMode) {
    $('main').addEventListener('click', (e) => {
      const b = e.target.closest('#view-nodes button[data-act]');
      if (b) void source.onNodeAction(b.dataset.act, b.dataset.node);
    });
  } else {
    wireAuth(source);
    source.start();
    setInterval(changed, 1_000); // ages and the lease column move with the clock
  }
  start({ base: () => ({ mode: simMode ? 'sim' : 'live', source, feed: source.feed, store: source.store, now: () => source.now() }), fallback: 'services' });
  window.ccaConsole = { source, ui, render: changed };
  changed();
}

/** Settles once the console runs (web/boot.js loads the page again when it fails: simulation mode imports more). */
export const started = main();
