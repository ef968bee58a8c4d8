import { z } from 'zod';

/**
 * How a replica came to be, was asked to stop, and ended: typed fields of its record
 * (`/replicas/<service>/<replica>`), written only by the replica controller. Controllers,
 * the simulation and the views decide on these fields; the sentences people read are
 * rendered from them here (`replicaReason`), so rewording a sentence changes no decision.
 */

const ms = z.int().min(0);

/**
 * How a replica ended:
 * - `completed`: it stopped by itself and its restart policy keeps it stopped (it counts
 *   toward the desired replicas: a job that ran);
 * - `restarted`: it stopped by itself and its restart policy brings it back as a new replica;
 * - `lost`: it went with its node (the node controller's finding);
 * - `stopped`: the replica controller asked it to stop (see `stopBy`) and the stop is done.
 */
export const replicaOutcomeSchema = z.enum(['completed', 'restarted', 'lost', 'stopped']);

/** What the agent reported of a workload that stopped by itself. */
export const replicaExitSchema = z.object({
  /** `lost`: the agent found the workload's supervisor gone and killed its group. */
  state: z.enum(['exited', 'failed', 'lost']),
  code: z.int().optional(),
  restart: z.enum(['always', 'on-failure', 'never']),
  /** A failed init step: its name, exit code and whether it timed out. */
  init: z.object({ step: z.string(), code: z.int().optional(), timedOut: z.boolean().optional() }).optional(),
  /** The agent's diagnostic message (e.g. "liveness failed: …"), when not an init failure. */
  message: z.string().optional(),
});

/** What showed that a stop the replica controller asked for is done. */
export const stopSeenSchema = z.enum(['never-placed', 'reported', 'lost-with-node', 'grace-expired']);

/** How a replica ended, with what is needed to say so. */
export const replicaEndedSchema = z.object({
  outcome: replicaOutcomeSchema,
  /** The node it ended on (absent: it was never placed). */
  node: z.string().optional(),
  /** completed and restarted: the agent's report. */
  exit: replicaExitSchema.optional(),
  /** stopped: what showed the stop, the state its node reported, the grace that ran out. */
  seen: stopSeenSchema.optional(),
  reported: z.enum(['exited', 'failed', 'lost']).optional(),
  graceMs: ms.optional(),
});

/** Why the replica controller asked a replica to stop. */
export const stopBySchema = z.object({
  by: z.enum(['scale-down', 'deletion', 'rollout', 'drain']),
  /** drain: the node being drained. */
  node: z.string().optional(),
});

/** Why the replica controller created a replica (`replacement`: see `replaces`). */
export const replicaOriginSchema = z.object({
  by: z.enum(['scale', 'replacement', 'rollout', 'drain']),
  /** drain: the nodes being drained. */
  nodes: z.array(z.string()).optional(),
});

/** The replica a replacement replaces, and how that one ended (its record is deleted once released). */
export const replacesSchema = z.object({ replica: z.string(), ended: replicaEndedSchema });

export type ReplicaOutcome = z.output<typeof replicaOutcomeSchema>;
export type ReplicaExit = z.output<typeof replicaExitSchema>;
export type ReplicaEnded = z.output<typeof replicaEndedSchema>;
export type StopBy = z.output<typeof stopBySchema>;
export type ReplicaOrigin = z.output<typeof replicaOriginSchema>;

/** The fields of a replica record this module reads (the record itself is in facts.ts). */
interface Outcomes {
  service: string;
  template: string;
  retired: boolean;
  reason: string;
  origin?: ReplicaOrigin | undefined;
  replaces?: { replica: string; ended: ReplicaEnded } | undefined;
  stopBy?: StopBy | undefined;
  ended?: ReplicaEnded | undefined;
}

/**
 * A record written before outcomes were typed keeps its sentence in `reason` only (new
 * writers leave `reason` empty, and clear it when they type an old record's stop or end).
 * The one outcome a controller acts on, `completed` (it counts toward the desired replicas,
 * and its record is kept), is read from that sentence here, once, at the store boundary:
 * otherwise an upgrade would run a finished job again.
 */
export function withLegacyOutcome<T extends Outcomes>(r: T): T {
  if (r.ended || !r.retired || !r.reason.startsWith('completed')) return r;
  return { ...r, ended: { outcome: 'completed' } };
}

/** It ran to completion under a no-restart policy: it counts toward the desired replicas. */
export function ranToCompletion(r: Pick<Outcomes, 'retired' | 'ended'>): boolean {
  return r.retired && r.ended?.outcome === 'completed';
}

/** It ended by itself or with its node: what a stuck roll's new replicas ran into. */
export function endedBadly(r: Pick<Outcomes, 'retired' | 'ended'>): boolean {
  return r.retired && (r.ended?.outcome === 'restarted' || r.ended?.outcome === 'lost');
}

/** "failed with code 1", "init step migrate timed out": what the agent reported, without the node. */
export function exitText(e: ReplicaExit): string {
  if (e.init) return `init step ${e.init.step} ${e.init.timedOut ? 'timed out' : `failed (code ${e.init.code ?? e.code ?? '?'})`}`;
  return `${e.state}${e.code !== undefined ? ` with code ${e.code}` : ''}`;
}

/** "stopped by itself"/"lost" sentences: "completed: exited with code 0 on n1 (restart never)", "lost with node n2". */
export function endedText(e: ReplicaEnded): string {
  const node = e.node ?? '?';
  switch (e.outcome) {
    case 'lost':
      return `lost with node ${node}`;
    case 'completed':
    case 'restarted': {
      if (!e.exit) return e.outcome === 'completed' ? 'completed' : `restarted on ${node}`;
      const because = !e.exit.init && e.exit.message ? `: ${e.exit.message}` : '';
      return `${e.outcome === 'completed' ? 'completed: ' : ''}${exitText(e.exit)} on ${node} (restart ${e.exit.restart})${because}`;
    }
    case 'stopped':
      return stopSeenText(e);
  }
}

/** What showed a requested stop is done: "n1 reports it exited". */
export function stopSeenText(e: Pick<ReplicaEnded, 'node' | 'seen' | 'reported' | 'graceMs'>): string {
  switch (e.seen) {
    case 'never-placed':
      return 'it was never placed';
    case 'reported':
      return `${e.node ?? '?'} reports it ${e.reported ?? 'stopped'}`;
    case 'lost-with-node':
      return `lost with node ${e.node ?? '?'}`;
    case 'grace-expired':
      return `the grace period of ${e.graceMs ?? '?'} ms ran out`;
    default:
      return 'stopped';
  }
}

/** "rolling update", "drain of node n1", "scaled down", "service deleted". */
export function stopByText(s: StopBy): string {
  switch (s.by) {
    case 'rollout':
      return 'rolling update';
    case 'drain':
      return `drain of node ${s.node ?? '?'}`;
    case 'scale-down':
      return 'scaled down';
    case 'deletion':
      return 'service deleted';
  }
}

/** Why it was created: "replaces web-1 (lost with node n2)", "rolling update of web to template ab12"; '' to reach the count. */
export function originText(r: Pick<Outcomes, 'service' | 'template' | 'origin' | 'replaces'>): string {
  if (r.replaces) return `replaces ${r.replaces.replica} (${endedText(r.replaces.ended)})`;
  switch (r.origin?.by) {
    case 'rollout':
      return `rolling update of ${r.service} to template ${r.template}`;
    case 'drain':
      return `drain of node ${(r.origin.nodes ?? []).join(', ')}`;
    default:
      return '';
  }
}

/**
 * The sentence shown for a replica (`cca get replicas`, the console, `why`): how it ended,
 * else why it is stopping, else why it was created; a record from before typed outcomes
 * shows the sentence it was stored with.
 */
export function replicaReason(r: Outcomes): string {
  if (r.reason) return r.reason;
  if (r.ended) return r.ended.outcome === 'stopped' && r.stopBy ? `${stopByText(r.stopBy)}: ${endedText(r.ended)}` : endedText(r.ended);
  if (r.stopBy) return stopByText(r.stopBy);
  return originText(r);
}
