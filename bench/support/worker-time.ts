/** Where a pod's workers spent their time: seconds and steps per controller, from its /metrics. */
export type WorkerTime = Map<string, { n: number; s: number }>;

export async function workerTime(server: string): Promise<WorkerTime> {
  const metrics = await (await fetch(`${server}/metrics`)).text();
  const steps: WorkerTime = new Map();
  for (const m of metrics.matchAll(/^cca_controller_step_duration_seconds_(sum|count)\{controller="([^"]+)"\} ([\d.e+-]+)$/gm)) {
    const e = steps.get(m[2]!) ?? { n: 0, s: 0 };
    if (m[1] === 'sum') e.s = Number(m[3]);
    else e.n = Number(m[3]);
    steps.set(m[2]!, e);
  }
  return steps;
}

/** The difference between two readings (the time spent between them). */
export function workerTimeSince(now: WorkerTime, before: WorkerTime): WorkerTime {
  return new Map([...now].map(([c, e]) => [c, { n: e.n - (before.get(c)?.n ?? 0), s: e.s - (before.get(c)?.s ?? 0) }]));
}

export function workerTimeText(steps: WorkerTime): string {
  return [...steps].sort((a, b) => b[1].s - a[1].s).filter(([, e]) => e.n > 0).map(([c, e]) => `${c} ${e.s.toFixed(1)} s over ${e.n} steps`).join('; ');
}

export function workerTimeJson(steps: WorkerTime): Record<string, { seconds: number; steps: number }> {
  return Object.fromEntries([...steps].map(([c, e]) => [c, { seconds: Number(e.s.toFixed(2)), steps: e.n }]));
}
