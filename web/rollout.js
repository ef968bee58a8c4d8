// The rollouts view: each service's latest rolling update as the rollout controller records
// it (`/rollouts/<service>`, docs/rollouts.md): state, a progress bar of new replicas ready
// against desired, old/new/ready counts over time (since this tab saw the roll) and, when
// it is stuck, the controller's reason.
import { RolloutLog } from './rollout-log.js';
import { formatFilter, formatHash, passes } from './filter.js';
import { followHistory } from './feed.js';
import { chart } from './svg.js';
import { h, keyedTable, clock } from './dom.js';

const when = (ms) => (ms > 1e11 ? clock(ms) : `t=${(ms / 1000).toFixed(1)}s`);

export function createRolloutView(el, { source, onChange }) {
  const log = new RolloutLog();
  followHistory(source, (batch, at) => log.ingest(batch, at) && onChange());
  el.replaceChildren(h('h2', {}, 'rollouts'), h('div.rollout-rows'));

  function update(state, filter) {
    const replicas = state.views?.replicas ?? [];
    const rows = (state.views?.services ?? []).filter((s) => s.rollout && passes(filter, { services: [s.name], state: s.rollout.state, replicas: filter?.replica ? replicas.filter((r) => r.service === s.name).map((r) => r.id) : [] }));
    keyedTable(el.querySelector('.rollout-rows'), {
      id: 'rollouts',
      key: (s) => s.name,
      rows,
      empty: 'No rolling update yet. Apply a changed spec (image, env, resources, …) to a running service.',
      rowClass: (s) => `rollout-${s.rollout.state}`,
      columns: [
        { title: 'service', cell: (s) => h('a.narrow', { href: formatHash({ view: 'timeline', q: formatFilter({ service: s.name }) }), title: `the timeline of ${s.name}` }, s.name) },
        { title: 'state', cell: (s) => h(`span.badge.rollout.${s.rollout.state}`, { 'data-state': s.rollout.state }, s.rollout.state) },
        { title: 'revision', cell: (s) => `${s.rollout.fromRevision} → ${s.rollout.toRevision}${s.rollout.current ? '' : ' (superseded)'}` },
        { title: 'progress', cell: (s) => progress(s.rollout) },
        { title: 'over time', cell: (s) => history(log.rolls.get(s.name), s.rollout, state.now) },
        { title: 'started', cell: (s) => `${when(s.rollout.startedAt)}${s.rollout.finishedAt !== undefined ? ` · done ${when(s.rollout.finishedAt)}` : ''}` },
        { title: 'stuck reason', cell: (s) => (s.rollout.state === 'stuck' ? h('span.error', {}, s.rollout.reason) : '') },
      ],
    });
  }

  return { update, log };
}

function progress(r) {
  const pct = r.desired > 0 ? Math.min(100, Math.round((r.newReady / r.desired) * 100)) : 0;
  return h('span.usage', { title: `${r.newReady} of ${r.desired} new replicas ready` },
    h('span.bar', {}, h(`span.fill${r.state === 'stuck' ? '.hot' : ''}`, { style: `width:${pct}%` })),
    h('span.label.counts', {}, `${r.newReady}/${r.desired} new ready · ${r.newLive} new live · ${r.oldLive} old left`));
}

/** Old live, new live and new ready as steps, against desired; only what this tab saw of the roll. */
function history(roll, r, now) {
  const samples = roll?.toRevision === r.toRevision ? roll.samples.items : [];
  if (samples.length === 0) return h('span.muted', {}, 'not seen from the start');
  const t0 = samples[0].t;
  const t1 = Math.max(t0 + 1, r.finishedAt ?? now);
  const pts = (f) => samples.map((p) => ({ t: p.t, v: f(p) }));
  return h('span.with-label', {}, chart({
    series: [
      { cls: 'old', step: true, points: pts((p) => p.oldLive), label: 'old replicas live' },
      { cls: 'new', step: true, points: pts((p) => p.newLive), label: 'new replicas live' },
      { cls: 'ready', step: true, points: pts((p) => p.newReady), label: 'new replicas ready' },
    ],
    lines: [{ v: r.desired, cls: 'bound', label: `desired ${r.desired}` }],
    t0, t1, vmax: Math.max(...samples.map((p) => Math.max(p.oldLive, p.newLive))), width: 260, height: 56,
    title: `rollout of revision ${r.toRevision}`,
  }), h('span.label.legend', {}, h('span.key.old', {}, 'old live'), h('span.key.new', {}, 'new live'), h('span.key.ready', {}, 'new ready')));
}
