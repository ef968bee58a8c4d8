// The timeline view: the cluster's decisions and observed changes, newest first, each linked
// to its subject's `why` chain, filtered to a service, node, replica or state. In the
// simulation a slider scrubs through the entries and shows the cluster as it was at the
// revision of the one picked (the in-page store is never compacted, so it is read at that
// revision: no copy of the state is kept per step).
import { readViews } from './views.js';
import { TimelineLog } from './timeline-log.js';
import { formatFilter, formatHash, isEmpty, passes } from './filter.js';
import { followHistory } from './feed.js';
import { h, patch, clock } from './dom.js';
import { s } from './svg.js';

/** Rows drawn at once (the log keeps more; a filter narrows them). */
const SHOWN = 300;

const when = (ms) => (ms > 1e11 ? clock(ms) : `t=${(ms / 1000).toFixed(1)}s`);
const whyHref = (w) => `#why/${w.kind}/${encodeURIComponent(w.name)}`;
/** The timeline narrowed to `f` (the shell's `#timeline?q=<filter>`). */
const filterHref = (f) => formatHash({ view: 'timeline', q: formatFilter(f) });

/**
 * `source`: the console's source (its change feed, and `storeAt` in the simulation);
 * `backfill(prefix)`: the key-values under a prefix, to add a filtered subject's retained
 * decisions and events from before the session; `onChange()`: ask for a render.
 */
export function createTimelineView(el, { source, backfill, onChange }) {
  const log = new TimelineLog();
  const asked = new Set();
  let scrub; // the revision picked on the slider, or undefined: now
  let shownAt; // the revision the cluster panel shows
  let lastState;
  let lastFilter;
  let since;
  followHistory(source, (batch, at) => {
    since ??= at;
    if (batch.reset) {
      scrub = undefined;
      shownAt = undefined;
      since = at;
      asked.clear();
    }
    if (log.ingest(batch) || batch.reset) onChange();
  });

  el.replaceChildren(
    h('div.timeline-head', {}, h('h2', {}, 'timeline'), h('span.timeline-scope'), h('span.timeline-count')),
    h('div.scrub', { hidden: !source.storeAt },
      h('label', {}, 'scrub ', h('input.scrub-range', { type: 'range', min: 0, max: 0, value: 0, step: 1, 'aria-label': 'the cluster at this entry' })),
      h('button.scrub-now', { type: 'button', title: 'follow the newest entry again' }, 'now'),
      h('span.scrub-at')),
    h('div.cluster-at', { hidden: true }),
    h('div.axis'),
    h('div.timeline-rows'));
  const range = el.querySelector('.scrub-range');
  range.addEventListener('input', () => {
    const list = visible(lastFilter);
    const i = Number(range.value);
    scrub = i >= list.length - 1 ? undefined : list[i]?.revision;
    onChange();
  });
  el.querySelector('.scrub-now').addEventListener('click', () => {
    scrub = undefined;
    onChange();
  });

  function visible(filter) {
    return log.entries.filter((e) => passes(filter, { ...e, text: `${e.action} ${e.reason} ${e.controller ?? ''}` }));
  }

  /**
   * A filtered subject's retained history from before the session (live: asked once per
   * subject). A failed listing is said in the header and asked again only when the filter
   * changes (never once per frame).
   */
  const failed = new Map();
  let filled;
  function fill(filter) {
    if (!backfill) return;
    const key = JSON.stringify(filter);
    if (key !== filled) {
      filled = key;
      for (const p of failed.keys()) asked.delete(p);
      failed.clear();
    }
    const prefixes = [];
    if (filter.replica) prefixes.push(`/decisions/replica/${filter.replica}/`);
    if (filter.service) prefixes.push(`/decisions/service/${filter.service}/`);
    if (filter.node) prefixes.push(`/decisions/node/${filter.node}/`, `/events/${filter.node}/`);
    for (const p of prefixes) {
      if (asked.has(p)) continue;
      asked.add(p);
      backfill(p).then((kvs) => log.backfill(kvs) && onChange(), (e) => {
        failed.set(p, `could not list ${p}: ${e?.message ?? e}`);
        drawn = undefined;
        onChange();
      });
    }
  }

  let drawn; // what the last update drew: nothing changed, nothing to do
  function update(state, filter) {
    lastState = state;
    lastFilter = filter;
    fill(filter ?? {});
    const sig = `${log.version}|${JSON.stringify(filter)}|${scrub}|${since}`;
    if (sig === drawn) return;
    drawn = sig;
    const list = visible(filter);
    const head = list.at(-1)?.revision ?? 0;
    patch(el.querySelector('.timeline-scope'), isEmpty(filter) ? 'the whole cluster' : h('span', {}, scopeText(filter), ' ', h('a.clear', { href: '#timeline?q=' }, 'clear')),
      ...[...failed.values()].map((m) => h('span.error.backfill-error', {}, ` · ${m}`)));
    patch(el.querySelector('.timeline-count'), `${list.length} entries since ${since === undefined ? '—' : when(since)}${log.entries.length >= log.max ? ` (the newest ${log.max} kept)` : ''}`);
    renderScrub(list);
    renderAxis(list);
    const rows = list.slice(-SHOWN).reverse();
    renderRows(el.querySelector('.timeline-rows'), rows, {
      empty: source.storeAt ? 'Nothing has happened yet: apply a fixture.' : 'Nothing decided or observed since this page opened. Filter to a service, node or replica to see its retained decisions.',
      classOf: (e) => `tl-${e.type}${scrub !== undefined && e.revision > scrub ? ' future' : ''}${scrub === e.revision ? ' scrubbed' : ''}`,
    });
  }

  function renderScrub(list) {
    if (!source.storeAt) return;
    const i = scrub === undefined ? list.length - 1 : Math.max(0, list.findIndex((e) => e.revision >= scrub));
    range.max = String(Math.max(0, list.length - 1));
    if (document.activeElement !== range) range.value = String(Math.max(0, i));
    const at = scrub === undefined ? undefined : list[i];
    patch(el.querySelector('.scrub-at'), at ? `the cluster at ${when(at.at)} (revision ${at.revision}), after: ${at.action}` : 'now (following)');
    const panel = el.querySelector('.cluster-at');
    panel.hidden = scrub === undefined;
    if (scrub !== undefined && shownAt !== scrub) {
      shownAt = scrub;
      const rev = scrub;
      void readViews(source.storeAt(rev)).then((v) => {
        if (shownAt === rev) renderCluster(panel, v, rev);
      });
    }
    if (scrub === undefined) shownAt = undefined;
  }

  /** One tick per entry across the time the log covers; the scrubbed one marked. */
  function renderAxis(list) {
    const axis = el.querySelector('.axis');
    if (list.length === 0) return axis.replaceChildren();
    const t0 = list[0].at;
    const t1 = Math.max(t0 + 1, list.at(-1).at);
    const w = 1000;
    const x = (t) => (((t - t0) / (t1 - t0)) * (w - 4) + 2).toFixed(1);
    // Two paths (decisions above, observations below) rather than an element per entry.
    const d = { decision: '', other: '' };
    for (const e of list) d[e.type === 'decision' ? 'decision' : 'other'] += e.type === 'decision' ? `M${x(e.at)} 2V12` : `M${x(e.at)} 10V20`;
    const at = scrub === undefined ? undefined : list.find((e) => e.revision === scrub);
    axis.replaceChildren(s('svg', { class: 'axis', viewBox: `0 0 ${w} 22`, preserveAspectRatio: 'none', width: '100%', height: 22 }, s('title', {}, `${when(t0)} … ${when(t1)}`),
      s('path', { d: d.decision, class: 'tick decision' }), s('path', { d: d.other, class: 'tick observed' }),
      at ? s('path', { d: `M${x(at.at)} 0V22`, class: 'tick at' }) : undefined),
      h('div.axis-ends', {}, h('span', {}, when(t0)), h('span', {}, when(t1))));
  }

  return {
    update,
    /** The revision the slider picked (undefined: now), for other views that want to follow it. */
    get scrubbed() {
      return scrub;
    },
    log,
    get state() {
      return lastState;
    },
  };
}

/**
 * The rows, newest first. Entries never change, so each row is built once and kept (the
 * newest ones are inserted at the top); only the classes (dimmed, scrubbed) are updated.
 */
const built = new WeakMap();
function renderRows(container, rows, { empty, classOf }) {
  let table = container.querySelector('table');
  if (!table) {
    table = h('table', { 'data-id': 'timeline' }, h('thead', {}, h('tr', {}, ['when', 'subject', 'what', 'by', 'why / detail'].map((t, i) => h(i === 0 ? 'th.when' : 'th', {}, t)))), h('tbody'));
    container.append(table, h('p.empty'));
  }
  const body = table.tBodies[0];
  const want = new Set();
  rows.forEach((e, at) => {
    let tr = built.get(e);
    if (!tr) built.set(e, (tr = rowOf(e)));
    want.add(tr);
    const cls = classOf(e);
    if (tr.className !== cls) tr.className = cls;
    if (body.rows[at] !== tr) body.insertBefore(tr, body.rows[at] ?? null);
  });
  for (const tr of [...body.rows]) if (!want.has(tr)) tr.remove();
  const note = container.querySelector('p.empty');
  note.hidden = rows.length > 0;
  note.textContent = empty;
}

function rowOf(e) {
  return h('tr', { dataset: { key: e.id } },
    h('td.when', {}, h('span', { title: `revision ${e.revision}`, 'data-revision': e.revision }, when(e.at))),
    h('td', {}, h('a.why', { href: whyHref(e.why), title: `why ${e.why.kind} ${e.why.name}` }, `${e.why.kind} ${e.why.name}`), ' ', h('a.narrow', { href: filterHref({ [e.why.kind]: e.why.name }), title: `only ${e.why.kind} ${e.why.name}` }, '⌕')),
    h('td', {}, h(`span.tl-mark.${e.type}`), h('span.action', {}, e.action)),
    h('td', {}, e.controller ?? (e.type === 'event' ? `agent ${e.nodes[0]}` : '')),
    h('td', {}, e.reason));
}

function scopeText(f) {
  return ['service', 'node', 'replica', 'state', 'text'].filter((k) => f[k]).map((k) => `${k} ${f[k]}`).join(' · ');
}

/** The nodes and their replicas at one revision (what the map shows now, as it was then). */
function renderCluster(panel, { nodes, replicas }, revision) {
  const byNode = new Map(nodes.map((n) => [n.name, []]));
  const pending = [];
  for (const r of replicas) {
    if (r.node && byNode.has(r.node)) byNode.get(r.node).push(r);
    else if (r.desired === 'run') pending.push(r);
  }
  const chip = (r) => h(`span.tl-chip.${r.state}`, { 'data-replica': r.id, title: `${r.id}: ${r.state}` }, r.id);
  patch(panel,
    h('div.cluster-rev', {}, `revision ${revision}`),
    h('div.nodes-at', {}, nodes.map((n) => h(`div.node-at.${n.state}`, { 'data-node': n.name },
      h('div.node-name', {}, `${n.name} `, h(`span.badge.${n.state}`, {}, n.state)),
      h('div.tl-chips', {}, (byNode.get(n.name) ?? []).map(chip))))),
    pending.length ? h('div.pending-at', {}, 'not placed: ', pending.map(chip)) : '');
}
