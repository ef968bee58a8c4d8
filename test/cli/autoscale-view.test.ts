import { expect, test } from 'vitest';
import { scaleText, tableOf, type ServiceItem } from '../../cli/views.js';

const item = (extra: Partial<ServiceItem> = {}): ServiceItem => ({ name: 'web', image: 'web:1', desired: 3, replicas: 3, placed: 3, running: 3, ready: 3, updated: 3, pending: [], rollout: null, ...extra });

test('cca get services shows the autoscaled count with its bounds and the utilisation against the target', () => {
  const scaled = item({ autoscale: { min: 2, max: 10, targetCpuPercent: 60, cpuPercent: 71 } });
  expect(scaleText(scaled)).toBe('3 (autoscaled 2–10, cpu 71%/60%)');
  expect(scaleText(item({ autoscale: { min: 2, max: 10, targetCpuPercent: 60, cpuPercent: null } }))).toBe('3 (autoscaled 2–10, cpu -/60%)');
  const t = tableOf({ kind: 'services', revision: 1, items: [scaled, item({ name: 'db', desired: 1 })] }, false);
  expect(t.headers).toEqual(['NAME', 'READY', 'RUNNING', 'PLACED', 'PENDING', 'DESIRED']);
  expect(t.rows.map((r) => r[5])).toEqual(['3 (autoscaled 2–10, cpu 71%/60%)', '1']);
});

test('without autoscaled services the table is as before', () => {
  const t = tableOf({ kind: 'services', revision: 1, items: [item()] }, false);
  expect(t.headers).toEqual(['NAME', 'READY', 'RUNNING', 'PLACED', 'PENDING']);
});
