// The usage view: per service and per node, CPU and memory over the last ten minutes as
// sparklines, from the usage the agents report (web/usage-log.js). An autoscaled service's
// CPU is drawn as it is judged — percent of its request, with the target — and next to it
// the replicas the autoscaler asked for, with the spec's min and max.
import { UsageLog } from './usage-log.js';
import { formatFilter, formatHash, passes } from './filter.js';
import { followHistory } from './feed.js';
import { chart, peak } from './svg.js';
import { h, keyedTable, bytes, ago } from './dom.js';

export const WINDOW_MS = 10 * 60_000;

const timelineLink = (kind, name) => h('a.narrow', { href: formatHash({ view: 'timeline', q: formatFilter({ [kind]: name }) }), title: `the timeline of ${kind} ${name}` }, name);

/** 'service:<name>' and 'node:<name>' → the ids of their replicas. */
function groupReplicas(replicas) {
  const out = new Map();
  const add = (k, id) => (out.get(k) ?? out.set(k, []).get(k)).push(id);
  for (const r of replicas) {
    add(`service:${r.service}`, r.id);
    if (r.node) add(`node:${r.node}`, r.id);
  }
  return out;
}

export function createUsageView(el, { source, onChange }) {
  const log = new UsageLog();
  followHistory(source, (batch, at) => log.ingest(batch, at) && onChange());
  el.replaceChildren(
    h('h2', {}, 'usage ', h('span.muted.usage-window', {})),
    h('h3', {}, 'services'), h('div.usage-services'),
    h('h3', {}, 'nodes'), h('div.usage-nodes'));

  function update(state, filter) {
    const { services = [], nodes = [] } = state.views ?? {};
    // The last ten minutes, or as much of them as this tab has seen: one time axis for every chart.
    const t1 = state.now;
    const t0 = Math.min(t1 - 1_000, Math.max(t1 - WINDOW_MS, log.firstAt ?? t1));
    const points = (group, f) => (log.series.get(group)?.items ?? []).filter((p) => p.t >= t0 - 60_000).map((p) => ({ t: p.t, v: f(p) }));
    el.querySelector('.usage-window').textContent = `(the last ${ago(t1 - t0)} of what the agents report, kept in this tab; at most 10 minutes)`;
    // A service's row and a node's row concern their replicas too: `replica:web-1` shows web's and its node's.
    const replicasOf = groupReplicas(state.views?.replicas ?? []);
    const svcRows = services.filter((s) => passes(filter, { services: [s.name], nodes: [], replicas: replicasOf.get(`service:${s.name}`) }));
    keyedTable(el.querySelector('.usage-services'), {
      id: 'usage-services',
      key: (s) => `service:${s.name}`,
      rows: svcRows,
      empty: 'No services.',
      columns: [
        { title: 'service', cell: (s) => timelineLink('service', s.name) },
        { title: 'cpu', cell: (s) => serviceCpu(s, points, t0, t1) },
        { title: 'memory', cell: (s) => memChart(points(`service:${s.name}`, (p) => p.mem), t0, t1, s.spec.resources.memoryBytes * Math.max(1, s.desired), `memory of ${s.name}`) },
        { title: 'replicas', cell: (s) => replicasChart(s, log, points, t0, t1) },
        { title: 'now', cls: 'num', cell: (s) => nowText(log.series.get(`service:${s.name}`)?.last) },
      ],
    });
    const nodeRows = nodes.filter((n) => passes(filter, { services: [], nodes: [n.name], replicas: replicasOf.get(`node:${n.name}`) }));
    keyedTable(el.querySelector('.usage-nodes'), {
      id: 'usage-nodes',
      key: (n) => `node:${n.name}`,
      rows: nodeRows,
      empty: 'No nodes.',
      columns: [
        { title: 'node', cell: (n) => timelineLink('node', n.name) },
        { title: 'cpu', cell: (n) => chart({ series: [{ cls: 'cpu', points: points(`node:${n.name}`, (p) => p.cpu), label: 'cpu used (millicores)' }], lines: [{ v: n.capacity.cpuMillis, cls: 'bound', label: `capacity ${n.capacity.cpuMillis}m` }], t0, t1, vmax: 0, title: `cpu of ${n.name}` }) },
        { title: 'memory', cell: (n) => memChart(points(`node:${n.name}`, (p) => p.mem), t0, t1, n.capacity.memoryBytes, `memory of ${n.name}`) },
        { title: 'now', cls: 'num', cell: (n) => nowText(log.series.get(`node:${n.name}`)?.last) },
      ],
    });
  }

  return { update, log };
}

function nowText(p) {
  return p ? `${p.cpu}m · ${bytes(p.mem)} · ${p.n} reporting` : 'no usage reported yet';
}

function memChart(pts, t0, t1, bound, title) {
  return chart({ series: [{ cls: 'mem', points: pts, label: 'memory used (bytes)' }], lines: bound ? [{ v: bound, cls: 'bound', label: `requested ${bytes(bound)}` }] : [], t0, t1, vmax: peak([{ points: pts }]), title });
}

/** Millicores in all; for an autoscaled service, the mean percent of request with the target line. */
function serviceCpu(s, points, t0, t1) {
  const group = `service:${s.name}`;
  const req = s.spec.resources.cpuMillis;
  if (s.autoscale && req > 0) {
    const pts = points(group, (p) => (p.n > 0 ? (p.cpu / (p.n * req)) * 100 : 0));
    return h('span.with-label', {},
      chart({ series: [{ cls: 'cpu', points: pts, label: 'cpu, % of request' }], lines: [{ v: s.autoscale.targetCpuPercent, cls: 'target', label: `target ${s.autoscale.targetCpuPercent}%` }], t0, t1, vmax: peak([{ points: pts }]), title: `cpu of ${s.name} (% of request)` }),
      h('span.label', {}, `% of ${req}m · target ${s.autoscale.targetCpuPercent}%`));
  }
  const pts = points(group, (p) => p.cpu);
  return chart({ series: [{ cls: 'cpu', points: pts, label: 'cpu used (millicores)' }], lines: req ? [{ v: req * s.desired, cls: 'bound', label: `requested ${req * s.desired}m` }] : [], t0, t1, vmax: peak([{ points: pts }]), title: `cpu of ${s.name}` });
}

/** An autoscaled service: the autoscaler's intent (step) and the replicas reporting, between min and max. */
function replicasChart(s, log, points, t0, t1) {
  if (!s.autoscale) return h('span.muted', {}, `${s.desired} (fixed)`);
  const intent = (log.intents.get(s.name)?.items ?? []).map((i) => ({ t: Math.max(i.t, t0), v: i.desired }));
  const reporting = points(`service:${s.name}`, (p) => p.n);
  return h('span.with-label', {},
    chart({
      series: [{ cls: 'intent', step: true, points: intent, label: 'replicas the autoscaler asked for' }, { cls: 'count', step: true, points: reporting, label: 'replicas reporting usage' }],
      lines: [{ v: s.autoscale.min, cls: 'bound', label: `min ${s.autoscale.min}` }, { v: s.autoscale.max, cls: 'bound', label: `max ${s.autoscale.max}` }],
      t0, t1, vmax: s.autoscale.max, title: `replicas of ${s.name}`,
    }),
    h('span.label', {}, `${s.desired} of ${s.autoscale.min}–${s.autoscale.max}`));
}
