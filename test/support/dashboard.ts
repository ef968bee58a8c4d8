import { readFileSync } from 'node:fs';

/** The metric names deploy/grafana-dashboard.json's queries use, histogram suffixes folded to the metric's name. */
export function dashboardMetrics(): string[] {
  const dash = JSON.parse(readFileSync('deploy/grafana-dashboard.json', 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  const names = new Set<string>();
  for (const p of dash.panels) for (const t of p.targets ?? []) for (const m of t.expr.matchAll(/\b((?:cca|process|nodejs)_\w+)/g)) names.add(m[1]!.replace(/_(bucket|count|sum)$/, ''));
  return [...names].sort();
}
