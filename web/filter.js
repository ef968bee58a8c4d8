// The filter every history view accepts: `{ text, service, node, replica, state }`, any of
// them empty. Read from (and written to) the query part of the URL's fragment,
// `#timeline?service=web&node=node1`, so a filtered view is a link.

const FIELDS = ['text', 'service', 'node', 'replica', 'state'];

export function filterFromHash(hash) {
  const q = new URLSearchParams(hash.split('?')[1] ?? '');
  return Object.fromEntries(FIELDS.map((f) => [f, q.get(f) ?? '']));
}

export function filterQuery(filter) {
  const q = new URLSearchParams();
  for (const f of FIELDS) if (filter?.[f]) q.set(f, filter[f]);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function isEmpty(filter) {
  return !FIELDS.some((f) => filter?.[f]);
}

/**
 * Whether a thing concerning `services`, `nodes`, `replicas` (arrays) in `state`, with
 * searchable `text`, passes the filter.
 */
export function passes(filter, { services = [], nodes = [], replicas = [], state = '', text = '' }) {
  if (!filter) return true;
  if (filter.service && !services.includes(filter.service)) return false;
  if (filter.node && !nodes.includes(filter.node)) return false;
  if (filter.replica && !replicas.includes(filter.replica)) return false;
  if (filter.state && state !== filter.state) return false;
  if (filter.text) {
    const needle = filter.text.toLowerCase();
    const hay = [...services, ...nodes, ...replicas, state, text].join(' ').toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  return true;
}
