// The console's search: one filter for every view, parsed from the search box and kept in
// the URL. Pure (no DOM), so it is unit-tested in Node (test/web/filter.test.ts).
//
//   web node:node3 state:running      → { text: 'web', service: '', node: 'node3', replica: '', state: 'running' }
//
// A qualified word (`service:`, `node:`, `replica:`, `state:`) must equal that field; every
// other word must appear in one of the item's fields (service, node, replica, state, zone …).

const QUALIFIERS = { service: 'service', svc: 'service', node: 'node', replica: 'replica', state: 'state' };
/** The qualified fields, in the order formatFilter writes them. */
export const FIELDS = ['service', 'node', 'replica', 'state'];

/** @returns {{ text: string, service: string, node: string, replica: string, state: string }} */
export function parseFilter(input = '') {
  const out = { text: '', service: '', node: '', replica: '', state: '' };
  const words = [];
  for (const word of String(input).trim().split(/\s+/).filter(Boolean)) {
    const m = /^([a-z]+):(.*)$/i.exec(word);
    const field = m && QUALIFIERS[m[1].toLowerCase()];
    if (field && m[2]) out[field] = m[2].toLowerCase();
    else words.push(word.toLowerCase());
  }
  out.text = words.join(' ');
  return out;
}

/** The filter back as search-box text (the inverse of parseFilter, in a fixed order). */
export function formatFilter(f) {
  return [f.text, ...FIELDS.map((k) => f[k] && `${k}:${f[k]}`)].filter(Boolean).join(' ');
}

export function isEmpty(f) {
  return !f?.text && !FIELDS.some((k) => f?.[k]);
}

/** Are two filters the same? */
export const sameFilter = (a, b) => ['text', ...FIELDS].every((k) => (a?.[k] ?? '') === (b?.[k] ?? ''));

/**
 * Does an item pass the filter? `fields`: what the item has ({ service, node, replica, state,
 * zone }, any may be absent). A qualifier on a field the item lacks does not match.
 */
export function matches(f, fields) {
  for (const q of FIELDS) {
    if (f[q] && String(fields[q] ?? '').toLowerCase() !== f[q]) return false;
  }
  if (!f.text) return true;
  const hay = Object.values(fields).filter((v) => v !== undefined && v !== null).map((v) => String(v).toLowerCase());
  return f.text.split(' ').every((w) => hay.some((v) => v.includes(w)));
}

/**
 * Does a thing that concerns several subjects pass (a timeline entry names a service, its
 * nodes and replicas)? `services`, `nodes`, `replicas`: arrays; `state`; `text`: more words to
 * search. A qualifier matches if any of the thing's subjects equals it.
 */
export function passes(f, { services = [], nodes = [], replicas = [], state = '', text = '' }) {
  if (!f) return true;
  const lower = (xs) => xs.filter((x) => x !== undefined && x !== null).map((x) => String(x).toLowerCase());
  const has = { service: lower(services), node: lower(nodes), replica: lower(replicas), state: lower([state]) };
  for (const q of FIELDS) if (f[q] && !has[q].includes(f[q])) return false;
  if (!f.text) return true;
  const hay = [...has.service, ...has.node, ...has.replica, ...has.state, String(text ?? '').toLowerCase()];
  return f.text.split(' ').every((w) => hay.some((v) => v.includes(w)));
}

/**
 * The location hash: `#<view>[/<arg>…][?q=<filter>]`, e.g. `#map?q=service:web`,
 * `#why/replica/web-1`. A leading `/` is accepted (`#/map?q=web`), and so are the older
 * per-field parameters (`#timeline?replica=web-1` reads as `#timeline?q=replica:web-1`).
 */
export function parseHash(hash) {
  const raw = String(hash ?? '').replace(/^#\/?/, '');
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const params = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  let q = params.get('q') ?? '';
  // Older links put each field in its own parameter (`#timeline?replica=web-1&text=moved`).
  if (!params.has('q') && ['text', ...FIELDS].some((k) => params.get(k))) {
    q = formatFilter(parseFilter([params.get('text') ?? '', ...FIELDS.map((k) => (params.get(k) ? `${k}:${params.get(k)}` : ''))].join(' ')));
  }
  const [view = '', ...args] = path.split('/').map((s) => decodeURIComponent(s));
  return { view, args, q };
}

export function formatHash({ view, args = [], q = '' }) {
  const path = [view, ...args.map((a) => encodeURIComponent(a))].join('/');
  return `#${path}${q ? `?${new URLSearchParams({ q })}` : ''}`;
}
