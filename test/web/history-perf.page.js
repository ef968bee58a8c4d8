// Evaluated in the console's page by history-perf.test.ts (a string, so nothing transforms it):
// the history views' logs fed synthetic watch events at scale, and the timeline redrawn.
(async () => {
  const { UsageLog, MAX_SAMPLES } = await import('/web/usage-log.js');
  const { TimelineLog, MAX_ENTRIES } = await import('/web/timeline-log.js');
  const id = (i, c) => String(i).padStart(8, c).slice(-8);
  const kv = (key, value, rev, version) => ({ key, value: JSON.stringify(value), createRevision: 1, modRevision: rev, version, lease: 0 });
  // 10,000 replicas of 100 services on 1,000 nodes, each reporting once: 100 batches of 100 observations.
  const obs = (i, rev) => {
    const replica = `svc${i % 100}-${id(i, 'a')}`;
    const node = `node${i % 1000}`;
    return { type: 'put', kv: kv(`/observed/${node}/${replica}`, { replica, service: `svc${i % 100}`, node, tenure: 1, state: 'running', usage: { cpuMillis: i % 300, memoryBytes: 1 << 20 }, at: rev * 10 }, rev, 2) };
  };
  const usage = new UsageLog();
  const batches = [];
  for (let b = 0; b < 100; b++) batches.push({ revision: b + 2, events: Array.from({ length: 100 }, (_, j) => obs(b * 100 + j, b + 2)) });
  let t = performance.now();
  for (const b of batches) usage.ingest(b, 0);
  const usageMsPerObservation = (performance.now() - t) / 10_000;
  const dec = (i) => {
    const subject = `svc1-${id(i, 'b')}`;
    return { type: 'put', kv: kv(`/decisions/replica/${subject}/${String(i).padStart(13, '0')}-x`, { id: 'x', kind: 'replica', subject, controller: 'scheduler', action: 'placed on node1', at: i, evidence: [{ key: '/nodes/node1', modRevision: 1, value: '' }], reasons: ['fits'] }, i, 1) };
  };
  const log = new TimelineLog();
  t = performance.now();
  for (let i = 0; i < MAX_ENTRIES + 100; i++) log.ingest({ revision: i + 2, events: [dec(i + 2)] });
  const timelineMsPerDecision = (performance.now() - t) / (MAX_ENTRIES + 100);
  // The open timeline view, full, redrawn after each new decision (as on every watch batch).
  const view = window.ccaConsole.ui.history.timeline;
  for (let i = 0; i < MAX_ENTRIES; i++) view.log.ingest({ revision: i + 2, events: [dec(i + 2)] });
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 100))); // the shell draws the open view
  const times = [];
  for (let k = 0; k < 21; k++) {
    view.log.ingest({ revision: 5_000 + k, events: [dec(5_000 + k)] });
    const t0 = performance.now();
    view.update(view.state, {});
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const samples = Math.max(...[...usage.series.values()].map((r) => r.length));
  return { usageMsPerObservation, timelineMsPerDecision, timelineUpdateMedianMs: times[10], series: usage.series.size, entries: log.entries.length, maxEntries: MAX_ENTRIES, samples, maxSamples: MAX_SAMPLES, rows: document.querySelectorAll('table[data-id="timeline"] tbody tr').length };
})()
