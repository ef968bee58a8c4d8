/**
 * What every view of a service counts: the API's status (jobs/views/status.ts), the console
 * that renders it, and `cca get -o json` (cli/views.ts). One definition, so the three cannot
 * drift apart.
 */
export interface ServiceCounts {
  desired: number;
  replicas: number;
  placed: number;
  running: number;
  ready: number;
  /** Live replicas made from the spec's current template (a rolling update replaces the others). */
  updated: number;
  pending: { replica: string; reason: string }[];
}
