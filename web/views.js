// The four views, rendered from the same status views the server's API answers with
// (jobs/views/status.ts), computed here over a store: the live mirror or the simulation's.
import { serviceStatuses, replicaViews, nodeViews } from '/src/jobs/views/status.js';
import { readFacts } from '/src/jobs/facts.js';
import { h, keyedTable, patch, ago, bytes, clock } from './dom.js';
import { isEmpty, matches } from './filter.js';

/** Read all three views at one revision of `store`. */
export async function readViews(store) {
  const [{ services }, { replicas }, { nodes }, status] = await Promise.all([serviceStatuses(store), replicaViews(store), nodeViews(store), readFacts(store, 'nodeStatus')]);
  // How long the node has been in its state under its current tenure (its lease's age while ready).
  const since = new Map(status.facts.map((f) => [f.value.node, f.value]));
  for (const n of nodes) {
    const s = since.get(n.name);
    if (s && (s.tenure === n.tenure || !n.registered)) n.since = s.since;
  }
  return { services, replicas: replicas.filter((r) => !r.retired), nodes };
}

/**
 * The views' rows that pass the search filter (web/filter.js): a replica by its service, node,
 * id and state; a node by its name, zone and state, or by a replica on it that passes; a
 * service by its name, or by a replica of it that passes.
 */
export function filterViews(views, f) {
  if (isEmpty(f)) return views;
  const replicas = views.replicas.filter((r) => matches(f, { service: r.service, node: r.node, replica: r.id, state: r.state }));
  const services = new Set(replicas.map((r) => r.service));
  const nodes = new Set(replicas.map((r) => r.node));
  return {
    ...views,
    replicas,
    services: views.services.filter((s) => services.has(s.name) || (!f.node && !f.state && matches(f, { service: s.name }))),
    nodes: views.nodes.filter((n) => nodes.has(n.name) || (!f.service && matches(f, { node: n.name, zone: n.zone, state: n.registered ? n.state : 'gone' }))),
  };
}

const whyLink = (kind, name, text = name) => h('a.why', { href: `#why/${kind}/${encodeURIComponent(name)}`, title: `why ${kind} ${name}` }, text);
const badge = (text, cls = text) => h(`span.badge.${cls}`, {}, text);

export function renderServices(el, { services }) {
  keyedTable(el, {
    id: 'services',
    key: (s) => s.name,
    rows: services,
    empty: 'No services yet. Apply one (cca apply, or a fixture in the simulation).',
    rowClass: (s) => (s.running >= s.desired ? 'ok' : s.pending.length ? 'warn' : 'progress'),
    columns: [
      { title: 'service', cell: (s) => whyLink('service', s.name) },
      { title: 'image', cell: (s) => s.spec.image },
      { title: 'desired', cls: 'num', cell: (s) => (s.autoscale ? `${s.desired} (autoscaled ${s.autoscale.min}–${s.autoscale.max}, cpu ${s.autoscale.cpuPercent ?? '-'}${s.autoscale.cpuPercent === undefined ? '' : '%'}/${s.autoscale.targetCpuPercent}%)` : String(s.desired)) },
      { title: 'running', cls: 'num', cell: (s) => h('span', { 'data-running': s.running }, String(s.running)) },
      { title: 'ready', cls: 'num', cell: (s) => String(s.ready) },
      { title: 'progress', cell: (s) => h('span.bar', { title: `${s.running} of ${s.desired} running` }, h('span.fill', { style: `width:${pct(s.running, s.desired)}%` })) },
      { title: 'pending', cell: (s) => s.pending.length === 0 ? '' : h('ul.reasons', {}, s.pending.map((p) => h('li', {}, whyLink('replica', p.replica, short(p.replica)), ': ', p.reason))) },
    ],
  });
}

export function renderReplicas(el, { replicas }) {
  const rows = [...replicas].sort((a, b) => a.service.localeCompare(b.service) || a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  keyedTable(el, {
    id: 'replicas',
    key: (r) => r.id,
    rows,
    empty: 'No replicas.',
    rowClass: (r) => `state-${r.state}`,
    columns: [
      { title: 'replica', cell: (r) => whyLink('replica', r.id) },
      { title: 'service', cell: (r) => r.service },
      { title: 'state', cell: (r) => badge(r.state) },
      { title: 'node', cell: (r) => (r.node ? whyLink('node', r.node) : '—') },
      { title: 'health', cell: (r) => (r.health ? `live ${r.health.liveness} · ready ${r.health.readiness}` : '—') },
      { title: 'restarts', cls: 'num', cell: (r) => String(r.restarts) },
      { title: 'reason', cell: (r) => (r.diagnostic ? `${r.diagnostic.code} ${r.diagnostic.message}` : r.reason) },
      { title: 'output', cell: (r) => (r.node ? h('a.logs', { href: `#logs/${encodeURIComponent(r.id)}`, title: `follow the output of ${r.id}` }, 'logs') : '') },
    ],
  });
}

/** `actions(node)`: extra buttons per node (the simulation's faults); `now`: the clock the store uses. */
export function renderNodes(el, { nodes, now, actions }) {
  keyedTable(el, {
    id: 'nodes',
    key: (n) => n.name,
    rows: nodes,
    empty: 'No nodes registered.',
    rowClass: (n) => `node-${n.state}${n.registered ? '' : ' unregistered'}`,
    columns: [
      { title: 'node', cell: (n) => whyLink('node', n.name) },
      { title: 'zone', cell: (n) => n.zone || '—' },
      { title: 'state', cell: (n) => badge(n.registered ? n.state : n.state === 'lost' ? 'lost' : 'gone', n.registered ? n.state : 'lost') },
      { title: 'cpu', cell: (n) => usage(n.used.cpuMillis, n.capacity.cpuMillis, `${n.used.cpuMillis}m / ${n.capacity.cpuMillis}m`) },
      { title: 'memory', cell: (n) => usage(n.used.memoryBytes, n.capacity.memoryBytes, `${bytes(n.used.memoryBytes)} / ${bytes(n.capacity.memoryBytes)}`) },
      { title: 'replicas', cls: 'num', cell: (n) => (n.capacity.replicas ? `${n.replicas}/${n.capacity.replicas}` : String(n.replicas)) },
      { title: 'lease', cell: (n) => `${n.registered ? 'held' : 'expired'} · tenure ${n.tenure} · ${n.state} for ${n.since !== undefined ? ago(now - n.since) : '—'}` },
      ...(actions ? [{ title: '', cell: (n) => actions(n) }] : []),
    ],
  });
}

function usage(used, cap, text) {
  const p = pct(used, cap);
  return h('span.usage', { title: text }, h('span.bar', {}, h(`span.fill${p > 90 ? '.hot' : ''}`, { style: `width:${p}%` })), h('span.label', {}, text));
}

/** A decision chain: newest decision back to its terminal, and whether it got there. */
export function renderWhy(el, subject, answer, error) {
  if (!subject) {
    patch(el, h('p.empty', {}, 'Pick a service, replica or node (its name links here) to see why it is the way it is.'));
    return;
  }
  const head = h('h2', {}, `why ${subject.kind} ${subject.name} `, h('button', { 'data-act': 'refresh-why', title: 'ask again: decisions made since are included' }, 'refresh'));
  if (error) return patch(el, head, h('p.error', {}, error));
  if (!answer) return patch(el, head, h('p', {}, 'loading…'));
  const status = answer.complete
    ? h('p.chain-status.complete', {}, `complete: reaches ${answer.terminal ? `${answer.terminal.fact} @${answer.terminal.modRevision}` : 'a terminal'}`)
    : h('p.chain-status.truncated', {}, `truncated: ${answer.truncated ?? 'a link is missing'}`);
  const link = ({ key, decision: d }) =>
    h('li.link', {},
      h('div.line', {}, h('span.action', {}, d.action), ' ', h('span.subject', {}, `${d.kind} ${d.subject}`), ' by ', h('span.controller', {}, d.controller), h('span.at', {}, ` at ${when(d.at)}`)),
      h('ul.reasons', {}, d.reasons.map((r) => h('li', {}, r))),
      d.evidence.length ? h('details', {}, h('summary', {}, `${d.evidence.length} evidence`), h('ul.evidence', {}, d.evidence.map((e) => h('li', {}, h('code', {}, `${e.key} @${e.modRevision}`))))) : '',
      h('div.key', {}, key));
  patch(el, head, status,
    h('ol.chain', {}, answer.chain.map(link)),
    answer.terminal ? h('p.terminal', {}, 'terminal: ', h('code', {}, answer.terminal.fact), answer.terminal.current ? h('pre', {}, answer.terminal.current) : '') : '',
    answer.repeats.length ? h('p.repeats', {}, `repeated: ${answer.repeats.map((r) => `${r.controller} ×${r.repeat.count}`).join(', ')}`) : '',
    answer.history.length > 1 ? h('details.history', {}, h('summary', {}, `${answer.history.length} recent decisions`), h('ol', {}, answer.history.map(link))) : '');
}

/** Wall-clock times (live) as HH:MM:SS; virtual ones (the simulation starts at 0) as seconds. */
function when(ms) {
  return ms > 1e11 ? clock(ms) : `t=${(ms / 1000).toFixed(1)}s`;
}

function pct(a, b) {
  return b > 0 ? Math.min(100, Math.round((a / b) * 100)) : 0;
}

function short(id) {
  return id.length > 18 ? `${id.slice(0, 18)}…` : id;
}
