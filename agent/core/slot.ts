import { makeDiagnostic } from '../../core/diagnostics/index.js';
import type { Assignment, Observation } from '../../core/model/index.js';
import { CheckState } from './health.js';
import type { InitProgress, PullProgress, Usage, WorkloadHandle, WorkloadStatus } from './runtime.js';

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
  /** While pulling: the attempt, bytes, and the last attempt's failure. */
  pull?: PullProgress;
  diagnostic?: { code: string; message: string };
  /** Where the workload is reached, when the runtime knows (its own network namespace). */
  address?: string;
  ports?: Record<string, number>;
  /** Held (e.g. image not in the catalogue): never started, not retried. */
  held: boolean;
  /** Stopped by the fence: forgotten once exited, so it starts again if still assigned after. */
  fenced: boolean;
  liveness?: CheckState;
  readiness?: CheckState;
  /** An exit is being looked into (its init progress read): not reported until then. */
  settling?: boolean;
  /** Set when the agent stopped the workload because its liveness check failed: its exit is a failure. */
  livenessFailed?: { code: string; message: string };
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
    ...(slot.init === undefined ? {} : { init: initOf(slot.init) }),
    ...(slot.state === 'pulling' && slot.pull ? { pull: { attempt: slot.pull.attempt, ...(slot.pull.bytes === undefined ? {} : { bytes: slot.pull.bytes }) } } : {}),
    ...(diagnosticOf(slot) ?? {}),
    ...reachOf(slot, nodeAddress),
    at: now,
  };
}

/** The slot's diagnostic, or for a replica failed in an init step, that failure coded. */
function diagnosticOf(slot: Slot): { diagnostic: { code: string; message: string } } | undefined {
  const d = slot.diagnostic ?? (slot.state === 'failed' ? initFailure(slot) : undefined);
  return d ? { diagnostic: d } : undefined;
}

/** A failed init step as a coded diagnostic (CCA-E0518, or CCA-E0519 when it timed out), with the output's last line. */
export function initFailure(slot: Slot): { code: string; message: string } | undefined {
  const init = slot.init;
  if (init?.state !== 'failed') return undefined;
  const lines = (init.tail ?? '').trim().split('\n').filter((l) => l.trim() !== '');
  const tail = (init.timedOut ? lines.filter((l) => !l.startsWith('(init step ')) : lines).slice(-1)[0]?.slice(-200) ?? '(no output)';
  const base = { step: init.step, replica: slot.replica, service: slot.handle?.service ?? slot.assignment?.service ?? '', tail };
  const d = init.timedOut
    ? makeDiagnostic('CCA-E0519', { ...base, timeoutMs: slot.assignment?.spec.init.find((i) => i.name === init.step)?.timeoutMs ?? 0 })
    : makeDiagnostic('CCA-E0518', { ...base, exitCode: init.exitCode ?? slot.exitCode ?? 0 });
  return { code: d.code, message: d.message };
}

function initOf(p: InitProgress): NonNullable<Observation['init']> {
  return { step: p.step, state: p.state, ...(p.exitCode === undefined ? {} : { exitCode: p.exitCode }), tail: p.tail ?? '', ...(p.timedOut ? { timedOut: true } : {}) };
}

/** An observation's identity for change detection: everything but the time and the usage figures (not whether there are any). */
export function fingerprint(o: Observation): string {
  const { at: _at, usage, ...rest } = o;
  // The first usage sample is news (nothing to show before it); later figures are refreshes.
  return JSON.stringify({ ...rest, sampled: usage !== undefined });
}

/** States a workload does not leave. */
export const TERMINAL: ReadonlySet<Observation['state']> = new Set<Observation['state']>(['exited', 'failed', 'lost']);

/**
 * What an exit means: a stop we asked for ends `exited` whatever the signal's code, unless
 * we stopped it for failing its liveness check; a workload that died on its own is `failed`.
 */
export function exitState(slot: Slot, exitCode: number, oom: boolean): Observation['state'] {
  if (slot.livenessFailed) return 'failed';
  return exitCode === 0 || (slot.state === 'stopping' && !oom) ? 'exited' : 'failed';
}

/** What the runtime says of a workload, onto its slot (a start failure's diagnostic is the caller's). */
export function applyStatus(slot: Slot, s: WorkloadStatus): void {
  if (s.state === 'exited') {
    slot.state = exitState(slot, s.exitCode ?? 0, s.oom ?? false);
    if (s.exitCode !== undefined) slot.exitCode = s.exitCode;
  } else if (s.state === 'lost') {
    slot.state = 'lost';
    if (s.lost) slot.diagnostic = s.lost;
  } else {
    slot.state = s.state;
  }
  // A failed pull attempt's diagnostic stays on the replica while the runtime retries; it goes once the pull works.
  if (s.state === 'pulling' && s.pull?.diagnostic) slot.diagnostic = s.pull.diagnostic;
  else if (s.state !== 'pulling' && slot.pull?.diagnostic && slot.diagnostic?.code === slot.pull.diagnostic.code) delete slot.diagnostic;
  if (s.state === 'pulling' && s.pull) slot.pull = s.pull;
  else delete slot.pull;
  // The digest a pull resolved is known after start() returned: the runtime's handle has it.
  if (slot.handle && s.handle.id === slot.handle.id && s.handle.image !== '') slot.handle.image = s.handle.image;
  if (s.usage) slot.usage = s.usage;
  if (s.init) slot.init = s.init;
  // A workload that ended has no address any more (its namespace may be gone, or reused).
  if (s.address !== undefined && s.state !== 'exited' && s.state !== 'lost') slot.address = s.address;
  else delete slot.address;
  if (s.ports !== undefined && slot.address !== undefined) slot.ports = s.ports;
  else delete slot.ports;
}
