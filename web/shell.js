// The console's shell: the views registered with it become tabs; the URL's fragment names
// the view, its arguments and the filter (`#map?q=service:web`, web/filter.js); one search box
// filters every view; the keyboard moves between views and items. A view plugs in with
//
//   registerView({ id, title, key, mount(el, ctx), update(ctx), hide(), items(el) })
//
// `mount` runs once, the first time the view is shown, with its own <section>; `update` runs
// when it is shown, when the route or the filter changes, and after the data changed (at most
// once per animation frame) while it is visible; `hide` (optional) when another view is shown.
// `key` (optional): the letter that, after `g`, opens it. `ctx` is described in docs/console.md.
import { formatFilter, formatHash, parseFilter, parseHash } from './filter.js';
import { h } from './dom.js';

const views = [];
const mounted = new Set();
let env; // set by start(): { base(): object, default: string }
let current = { view: '', args: [], q: '' };
let filter = parseFilter('');
let pendingG = 0;

export function registerView(view) {
  if (views.some((v) => v.id === view.id)) throw new Error(`view ${view.id} is registered twice`);
  views.push(view);
  addView(view); // module scripts run once the page is parsed: #tabs and main exist
}

/** The filter every view applies: { text, service, node, replica, state }. */
export function currentFilter() {
  return filter;
}

/** The route now: { view, args, q }. */
export function currentRoute() {
  return current;
}

/** Open a view (and arguments), keeping the filter. */
export function open(view, ...args) {
  location.hash = formatHash({ view, args, q: formatFilter(filter) });
}

/**
 * Start routing. `base()` returns what every view's ctx carries (the source, the mode …);
 * `fallback`: the view of an empty or unknown fragment.
 */
export function start({ base, fallback }) {
  env = { base, fallback };
  const search = document.querySelector('#search');
  search.addEventListener('input', () => setFilterText(search.value));
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      search.value = '';
      setFilterText('');
      search.blur();
    } else if (e.key === 'Enter') search.blur();
  });
  window.addEventListener('hashchange', route);
  document.addEventListener('keydown', onKey);
  route();
}

/** Call after the data changed: the visible view updates at the next frame. */
let frame = false;
export function changed() {
  if (frame || !env) return;
  frame = true;
  requestAnimationFrame(() => {
    frame = false;
    updateVisible();
  });
}

function ctx() {
  return { ...env.base(), filter, args: current.args, open };
}

function addView(v) {
  const tab = h('a', { href: `#${v.id}`, dataset: { view: v.id }, title: v.key ? `g ${v.key}` : undefined }, v.title ?? v.id);
  document.querySelector('#tabs').append(tab);
  let el = document.querySelector(`#view-${v.id}`);
  if (!el) {
    el = h('section.view', { id: `view-${v.id}`, dataset: { view: v.id }, hidden: true });
    document.querySelector('main').append(el);
  }
  v.el = el;
  syncTabs();
}

function route() {
  const r = parseHash(location.hash);
  const known = views.some((v) => v.id === r.view);
  // A fragment without a query (a link inside the page, `#why/replica/x`) keeps the filter;
  // `?q=` (empty) clears it.
  if (!location.hash.includes('?') && formatFilter(filter)) r.q = formatFilter(filter);
  const next = { view: known ? r.view : env.fallback, args: known ? r.args : [], q: r.q };
  const leaving = views.find((v) => v.id === current.view && v.id !== next.view);
  current = next;
  filter = parseFilter(next.q);
  const search = document.querySelector('#search');
  if (document.activeElement !== search) search.value = formatFilter(filter);
  leaving?.hide?.();
  for (const v of views) v.el.hidden = v.id !== current.view;
  document.body.dataset.view = current.view;
  syncTabs();
  updateVisible();
}

function setFilterText(text) {
  filter = parseFilter(text);
  current = { ...current, q: formatFilter(filter) };
  history.replaceState(null, '', formatHash(current));
  syncTabs();
  updateVisible();
}

function syncTabs() {
  const q = formatFilter(filter);
  for (const a of document.querySelectorAll('#tabs a')) {
    a.classList.toggle('active', a.dataset.view === current.view);
    a.setAttribute('href', formatHash({ view: a.dataset.view, q }));
  }
}

function updateVisible() {
  const v = views.find((x) => x.id === current.view);
  if (!v) return;
  const c = ctx();
  if (!mounted.has(v.id)) {
    mounted.add(v.id);
    v.mount?.(v.el, c);
  }
  v.update?.(c);
}

// ── keyboard ───────────────────────────────────────────────────────────────────

/** What j/k move between in a view: its rows and chips, as shown. */
function items(v) {
  const all = v.items ? v.items(v.el) : v.el.querySelectorAll('tbody tr, [data-nav]');
  return [...all].filter((e) => !e.classList.contains('out') && e.getClientRects().length > 0);
}

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
  if (pendingG && Date.now() - pendingG < 1_500) {
    pendingG = 0;
    const v = views.find((x) => x.key === e.key);
    if (v) {
      e.preventDefault();
      open(v.id);
    }
    return;
  }
  pendingG = 0;
  const v = views.find((x) => x.id === current.view);
  if (e.key === 'g') pendingG = Date.now();
  else if (e.key === '/') {
    e.preventDefault();
    document.querySelector('#search').focus();
  } else if (e.key === '?') toggleHelp();
  else if (v && ['j', 'k', 'ArrowDown', 'ArrowUp'].includes(e.key)) {
    const list = items(v);
    if (list.length === 0) return;
    e.preventDefault();
    const at = list.findIndex((x) => x.classList.contains('cursor'));
    const next = list[Math.max(0, Math.min(list.length - 1, at < 0 ? 0 : at + (e.key === 'j' || e.key === 'ArrowDown' ? 1 : -1)))];
    for (const x of v.el.querySelectorAll('.cursor')) x.classList.remove('cursor');
    next.classList.add('cursor');
    next.scrollIntoView({ block: 'nearest' });
  } else if (v && e.key === 'Enter') {
    const cur = v.el.querySelector('.cursor');
    const link = cur?.matches('a[href^="#why/"]') ? cur : cur?.querySelector('a.why');
    if (!link) return;
    e.preventDefault();
    location.hash = link.getAttribute('href');
  }
}

function toggleHelp() {
  let help = document.querySelector('#keys-help');
  if (help) return help.remove();
  help = h('div#keys-help.keys-help', { role: 'dialog' },
    h('h3', {}, 'keyboard'),
    h('ul', {},
      views.filter((v) => v.key).map((v) => h('li', {}, h('kbd', {}, 'g'), ' ', h('kbd', {}, v.key), ` ${v.title ?? v.id}`)),
      h('li', {}, h('kbd', {}, '/'), ' search (Esc clears)'),
      h('li', {}, h('kbd', {}, 'j'), ' ', h('kbd', {}, 'k'), ' next / previous item'),
      h('li', {}, h('kbd', {}, 'Enter'), ' why of the item'),
      h('li', {}, h('kbd', {}, '?'), ' this help')));
  document.body.append(help);
}
