// The console's entry: picks the mode (live, or the simulation with ?sim=1), routes the
// views by the URL's fragment, and re-renders from the source's store after each change.
import { LiveSource } from './live.js';
import { readViews, renderServices, renderReplicas, renderNodes, renderWhy } from './views.js';
import { clock } from './dom.js';
import { LogView } from './logs.js';
import { createTimelineView } from './timeline.js';
import { createUsageView } from './usage.js';
import { createRolloutView } from './rollout.js';
import { filterFromHash } from './filter.js';

const $ = (s) => document.querySelector(s);
const params = new URLSearchParams(location.search);
const simMode = params.get('sim') === '1';
const ui = { view: 'services', why: undefined, whyAnswer: undefined, whyError: undefined, selected: new Map(), views: undefined, filter: filterFromHash('') };

let source;
let logView;
let dirty = false;
let rendering = false;

function changed() {
  if (dirty) return;
  dirty = true;
  requestAnimationFrame(() => void render());
}

async function render() {
  if (rendering) {
    setTimeout(() => void render(), 50);
    return;
  }
  rendering = true;
  dirty = false;
  try {
    if (!source?.store) return;
    ui.views = await readViews(source.store);
    const now = source.now();
    explainPending(ui.views.services);
    renderServices($('#view-services'), ui.views);
    renderReplicas($('#view-replicas'), ui.views);
    renderNodes($('#view-nodes'), { ...ui.views, now, actions: simMode ? (n) => source.nodeActions(n) : undefined });
    renderWhy($('#view-why'), ui.why, ui.whyAnswer, ui.whyError);
    historyViews[ui.view]?.update({ views: ui.views, now }, ui.filter);
    document.body.dataset.services = String(ui.views.services.length);
  } catch (e) {
    console.error(e);
  } finally {
    rendering = false;
  }
}

/**
 * A pending replica's reason as the scheduler gave it (its newest decision, through `why`),
 * e.g. "no node has image ghost:9", rather than only "not placed yet". Asked for at most every
 * few seconds per replica; the answer is shown on the next render.
 */
const pendingReasons = new Map();
function explainPending(services) {
  const wanted = new Set();
  for (const s of services) {
    for (const p of s.pending) {
      wanted.add(p.replica);
      const known = pendingReasons.get(p.replica);
      if (known && (known.inflight || Date.now() - known.at < 5_000)) continue;
      pendingReasons.set(p.replica, { ...known, inflight: true, at: Date.now() });
      source
        .why('replica', p.replica)
        .then((a) => {
          const d = a.history?.[0]?.decision;
          pendingReasons.set(p.replica, { at: Date.now(), text: d && d.action === 'pending' ? d.reasons[0] : undefined });
          changed();
        })
        .catch(() => pendingReasons.set(p.replica, { at: Date.now() }));
    }
  }
  for (const id of pendingReasons.keys()) if (!wanted.has(id)) pendingReasons.delete(id);
  for (const s of services) for (const p of s.pending) {
    const text = pendingReasons.get(p.replica)?.text;
    if (text) p.reason = text;
  }
}

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

// The history views (issue 22): each follows the source's batches itself (it keeps its
// session history whichever view is open) and is drawn by update(state, filter) when open.
let historyViews = {};
function mountHistoryViews() {
  const onChange = () => historyViews[ui.view] && changed();
  const backfill = simMode ? undefined : async (prefix) => (await source.getJson(`/v1/state?${new URLSearchParams({ prefix, limit: '1000' })}`)).kvs;
  historyViews = {
    timeline: createTimelineView($('#view-timeline'), { source, backfill, onChange }),
    usage: createUsageView($('#view-usage'), { source, onChange }),
    rollouts: createRolloutView($('#view-rollouts'), { source, onChange }),
  };
}

function route() {
  const [path] = location.hash.replace(/^#/, '').split('?');
  const [view, kind, name] = path.split('/');
  ui.filter = filterFromHash(location.hash);
  ui.view = ['services', 'replicas', 'nodes', 'why', 'logs', ...Object.keys(historyViews)].includes(view) ? view : 'services';
  if (historyViews[ui.view]) changed();
  for (const sec of document.querySelectorAll('main .view')) sec.hidden = sec.dataset.view !== ui.view;
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('active', a.dataset.view === ui.view);
  // Only the open logs view holds a stream: leaving it ends the follow.
  if (ui.view === 'logs') logView?.show(kind ? decodeURIComponent(kind) : undefined);
  else logView?.stop();
  if (ui.view === 'why' && kind && name) void loadWhy(kind, decodeURIComponent(name));
  else if (ui.view === 'why') renderWhy($('#view-why'), ui.why, ui.whyAnswer, ui.whyError);
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
    const table = tr.closest('table');
    for (const other of table.querySelectorAll('tr.selected')) if (other !== tr) other.classList.remove('selected');
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
  window.addEventListener('hashchange', route);
  $('#view-why').addEventListener('click', (e) => {
    if (e.target.closest('button[data-act=refresh-why]') && ui.why) void loadWhy(ui.why.kind, ui.why.name);
  });
  if (simMode) logView = new LogView($('#view-logs'), undefined);
  if (simMode) {
    const { SimSource } = await import('./sim.js');
    const seed = Number(params.get('seed') ?? Math.floor(Math.random() * 1e6));
    source = new SimSource({ onChange: changed, onState: showState, panel: $('#sim'), seed });
    mountHistoryViews();
    $('#view-nodes').addEventListener('click', (e) => {
      const b = e.target.closest('button[data-act]');
      if (b) void source.onNodeAction(b.dataset.act, b.dataset.node);
    });
  } else {
    source = new LiveSource({ onChange: changed, onState: showState });
    mountHistoryViews();
    logView = new LogView($('#view-logs'), (extra) => source.headers(extra));
    wireAuth(source);
    source.start();
    setInterval(changed, 1_000); // ages and the lease column move with the clock
  }
  route();
  window.ccaConsole = { source, ui, render, historyViews };
  changed();
}

void main();
