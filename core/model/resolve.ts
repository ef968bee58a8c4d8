import type { ServiceSpec } from './service.js';

/**
 * Small readers other parts share, so each controller does not re-derive spec meaning on
 * its own (and differently).
 */

/** A port reference (number or declared name) as a number; undefined for an unknown name. */
export function portNumber(spec: Pick<ServiceSpec, 'ports'>, ref: number | string): number | undefined {
  if (typeof ref === 'number') return ref;
  return spec.ports.find((p) => p.name === ref)?.container;
}

/**
 * `maxSurge` / `maxUnavailable` as a replica count: a percentage of `replicas`, rounded up
 * for surge and down for unavailable, as Kubernetes does, so a rollout always progresses.
 */
export function resolveCountOrPercent(value: number | string, replicas: number, round: 'up' | 'down'): number {
  if (typeof value === 'number') return value;
  const pct = Number(value.slice(0, -1));
  const exact = (replicas * pct) / 100;
  return round === 'up' ? Math.ceil(exact) : Math.floor(exact);
}

/** The replica count the replica controller aims for: the autoscaler's intent within bounds, else the spec's. */
export function desiredReplicas(spec: Pick<ServiceSpec, 'replicas' | 'autoscale'>, intent?: number): number {
  if (!spec.autoscale || intent === undefined) return spec.replicas;
  return Math.min(spec.autoscale.max, Math.max(spec.autoscale.min, intent));
}

/** A spec is stateful when it has volumes: its replicas move off a lost node only with a fencing proof. */
export function isStateful(spec: Pick<ServiceSpec, 'volumes'>): boolean {
  return spec.volumes.length > 0;
}

/**
 * What a replica is made from. A change to any of these needs new replicas (a rolling
 * update); every other field (replicas, autoscale, update, placement, network, labels,
 * after) is applied to the running replicas' bookkeeping without replacing them.
 */
export const ROLLOUT_FIELDS = [
  'image',
  'command',
  'args',
  'env',
  'workdir',
  'resources',
  'ports',
  'health',
  'init',
  'configs',
  'secrets',
  'volumes',
  'stopGraceMs',
  'restart',
] as const satisfies readonly (keyof ServiceSpec)[];

/** The fields whose change makes `next` roll out over `prev`; empty when the replicas can stay. */
export function rolloutChanges(prev: ServiceSpec, next: ServiceSpec): (typeof ROLLOUT_FIELDS)[number][] {
  // Specs are normalised (fixed key order, sorted maps), so JSON text equality is value equality.
  return ROLLOUT_FIELDS.filter((f) => JSON.stringify(prev[f]) !== JSON.stringify(next[f]));
}
