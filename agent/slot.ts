import type { Assignment, Observation } from '../core/model/index.js';
import { CheckState } from './health.js';
import type { InitProgress, Usage, WorkloadHandle } from './runtime.js';

/** What the agent knows of one replica on its node: the assignment, the workload, what it reported. */
export interface Slot {
  replica: string;
  assignment?: Assignment;
  handle?: WorkloadHandle;
  state: Observation['state'];
  exitCode?: number;
  restarts: number;
  usage?: Usage;
  init?: InitProgress;
  diagnostic?: { code: string; message: string };
  /** Held (e.g. image not in the catalogue): never started, not retried. */
  held: boolean;
  /** Stopped by the fence: forgotten once exited, so it starts again if still assigned after. */
  fenced: boolean;
  liveness?: CheckState;
  readiness?: CheckState;
  /** Set when the agent stopped the workload because its liveness check failed: its exit is a failure. */
  livenessFailed?: { code: string; message: string };
  /** Where the runtime says the workload is reached (its own network namespace); host networking when absent. */
  address?: string;
  ports?: Record<string, number>;
  /** The last observation sent, without `at`, to send only changes. */
  reported?: string;
  reportedAt: number;
}

export function newSlot(replica: string): Slot {
  return { replica, state: 'pending', restarts: 0, held: false, fenced: false, reportedAt: 0 };
}

/** Host networking: replicas listen on the node's own address (the declared one, loopback when none). */
export const HOST_ADDRESS = '127.0.0.1';

/**
 * Where a replica can be reached: the runtime's own answer (a replica in its own network
 * namespace), else the node's declared address with the spec's container ports.
 */
export function reachOf(slot: Slot, nodeAddress: string): { address?: string; ports?: Record<string, number> } {
  if (!slot.handle) return {};
  const spec = slot.assignment?.spec;
  const ports = slot.ports ?? (spec ? Object.fromEntries(spec.ports.map((p) => [p.name, p.container])) : undefined);
  return { address: slot.address ?? (nodeAddress || HOST_ADDRESS), ...(ports ? { ports } : {}) };
}

export function observationOf(slot: Slot, node: string, tenure: number, now: number, nodeAddress = ''): Observation | undefined {
  const service = slot.assignment?.service ?? slot.handle?.service;
  if (service === undefined) return undefined;
  return {
    replica: slot.replica,
    service,
    node,
    tenure,
    state: slot.state,
    ...(slot.exitCode === undefined ? {} : { exitCode: slot.exitCode }),
    restarts: slot.restarts,
    health: { liveness: slot.liveness?.state ?? 'unknown', readiness: slot.readiness?.state ?? 'unknown' },
    ...(slot.usage === undefined ? {} : { usage: slot.usage }),
    image: slot.handle?.image ?? '',
    ...(slot.init === undefined ? {} : { init: { step: slot.init.step, state: slot.init.state, ...(slot.init.exitCode === undefined ? {} : { exitCode: slot.init.exitCode }), tail: slot.init.tail ?? '' } }),
    ...(slot.diagnostic === undefined ? {} : { diagnostic: slot.diagnostic }),
    ...reachOf(slot, nodeAddress),
    at: now,
  };
}

/** An observation's identity for change detection: everything but the time and the usage figures. */
export function fingerprint(o: Observation): string {
  const { at: _at, usage: _usage, ...rest } = o;
  return JSON.stringify(rest);
}
