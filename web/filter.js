// The console's search: one filter for every view, parsed from the search box and kept in
// the URL. Pure (no DOM), so it is unit-tested in Node (test/web/filter.test.ts).
//
//   web node:node3 state:running      → { text: 'web', service: '', node: 'node3', state: 'running' }
//
// A qualified word (`service:`, `node:`, `state:`) must equal that field; every other word
// must appear in one of the item's fields (service, node, replica, state, zone).

const QUALIFIERS = { service: 'service', svc: 'service', node: 'node', state: 'state' };

/** @returns {{ text: string, service: string, node: string, state: string }} */
export function parseFilter(input = '') {
  const out = { text: '', service: '', node: '', state: '' };
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
  return [f.text, f.service && `service:${f.service}`, f.node && `node:${f.node}`, f.state && `state:${f.state}`].filter(Boolean).join(' ');
}

export function isEmpty(f) {
  return !f.text && !f.service && !f.node && !f.state;
}

/**
 * Does an item pass the filter? `fields`: what the item has ({ service, node, replica, state,
 * zone }, any may be absent). A qualifier on a field the item lacks does not match.
 */
export function matches(f, fields) {
  for (const q of ['service', 'node', 'state']) {
    if (f[q] && String(fields[q] ?? '').toLowerCase() !== f[q]) return false;
  }
  if (!f.text) return true;
  const hay = Object.values(fields).filter((v) => v !== undefined && v !== null).map((v) => String(v).toLowerCase());
  return f.text.split(' ').every((w) => hay.some((v) => v.includes(w)));
}

/**
 * The location hash: `#<view>[/<arg>…][?q=<filter>]`, e.g. `#map?q=service:web`,
 * `#why/replica/web-1`. A leading `/` is accepted (`#/map?q=web`).
 */
export function parseHash(hash) {
  const raw = String(hash ?? '').replace(/^#\/?/, '');
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const q = at < 0 ? '' : new URLSearchParams(raw.slice(at + 1)).get('q') ?? '';
  const [view = '', ...args] = path.split('/').map((s) => decodeURIComponent(s));
  return { view, args, q };
}

export function formatHash({ view, args = [], q = '' }) {
  const path = [view, ...args.map((a) => encodeURIComponent(a))].join('/');
  return `#${path}${q ? `?${new URLSearchParams({ q })}` : ''}`;
}
