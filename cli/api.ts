import { z } from 'zod';
import { decisionSchema } from '../core/model/facts.js';

/**
 * The shapes of the API answers the CLI reads, checked at the boundary: an answer that does
 * not fit is the server's (or a proxy's) fault, CCA-E0708 (external), never a TypeError deep
 * in a renderer. Objects are loose, so a newer server's extra fields pass through.
 */
const count = z.number().int().min(0);
const resources = z.looseObject({ cpuMillis: count, memoryBytes: count });

export const healthAnswer = z.looseObject({ version: z.string() });

export const fieldChange = z.looseObject({ path: z.string(), old: z.unknown().optional(), new: z.unknown().optional() });
export const applyAnswer = z.looseObject({
  plan: z.looseObject({
    added: z.array(z.string()),
    changed: z.array(z.looseObject({ name: z.string(), changes: z.array(fieldChange), rolls: z.array(z.string()).default([]) })),
    unchanged: z.array(z.string()),
    removed: z.array(z.string()),
  }),
  revision: count,
  dryRun: z.boolean(),
});

export const deleteAnswer = z.looseObject({ deleted: z.string(), revision: count });

export const apiService = z.looseObject({
  name: z.string(),
  spec: z.looseObject({ image: z.string() }),
  desired: count,
  replicas: count,
  placed: count,
  running: count,
  ready: count,
  updated: count.optional(),
  pending: z.array(z.looseObject({ replica: z.string(), reason: z.string() })),
  autoscale: z.looseObject({ min: count, max: count, targetCpuPercent: count, cpuPercent: count.optional() }).optional(),
  rollout: z
    .looseObject({
      state: z.enum(['progressing', 'complete', 'stuck']),
      fromRevision: count,
      toRevision: count,
      reason: z.string(),
      desired: count,
      newReady: count,
      newLive: count,
      oldLive: count,
      current: z.boolean().optional(),
    })
    .optional(),
});
export const servicesAnswer = z.looseObject({ revision: count, services: z.array(apiService) });
export const serviceAnswer = z.looseObject({ revision: count, service: apiService });

export const apiReplica = z.looseObject({
  id: z.string(),
  service: z.string(),
  node: z.string().optional(),
  state: z.string(),
  desired: z.enum(['run', 'stop']),
  health: z.looseObject({ liveness: z.string(), readiness: z.string() }).optional(),
  restarts: count,
  exitCode: z.number().int().optional(),
  reason: z.string(),
  diagnostic: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  image: z.string().optional(),
  pull: z.looseObject({ attempt: z.number().int(), bytes: z.number().optional() }).optional(),
});
export const replicasAnswer = z.looseObject({ revision: count, replicas: z.array(apiReplica) });

export const apiEndpoint = z.looseObject({ replica: z.string(), node: z.string(), address: z.string(), ports: z.record(z.string(), z.number().int()) });
export const endpointsAnswer = z.looseObject({ revision: count, service: z.string(), endpoints: z.array(apiEndpoint) });

export const apiVolume = z.looseObject({
  node: z.string(),
  service: z.string(),
  volume: z.string(),
  state: z.string(),
  wanted: z.boolean(),
  sizeBytes: count,
  usedBytes: count.optional(),
  path: z.string().optional(),
  usedBy: z.string().optional(),
  deleteAt: count.optional(),
  deletesInMs: count.optional(),
  keepForMs: count.optional(),
  diagnostic: z.looseObject({ code: z.string(), message: z.string() }).optional(),
});
export const volumesAnswer = z.looseObject({ revision: count, volumes: z.array(apiVolume) });

export const apiNode = z.looseObject({
  name: z.string(),
  state: z.string(),
  registered: z.boolean(),
  zone: z.string(),
  runtime: z.string(),
  tenure: count,
  /** `replicas`: the node's cap (absent from an older server). */
  capacity: resources.extend({ replicas: count.optional() }),
  used: resources,
  replicas: count,
  labels: z.record(z.string(), z.string()),
  taints: z.array(z.string()),
  /** Absent from an older server. */
  conditions: z.array(z.looseObject({ kind: z.string(), code: z.string(), message: z.string() })).default([]),
});
export const nodesAnswer = z.looseObject({ revision: count, nodes: z.array(apiNode) });

const chainLink = z.looseObject({ key: z.string(), decision: decisionSchema.loose() });
export const whyAnswer = z.looseObject({
  kind: z.enum(['replica', 'node', 'service']),
  name: z.string(),
  history: z.array(chainLink),
  chain: z.array(chainLink),
  complete: z.boolean(),
  terminal: z.looseObject({ fact: z.string(), modRevision: count, current: z.string().optional() }).optional(),
  truncated: z.string().optional(),
  repeats: z.array(z.looseObject({ controller: z.string(), repeat: z.looseObject({ decision: z.string(), count, first: count, last: count }) })),
  /** Evidence cited by hash, as the server read it at its revision (absent from older servers). */
  cited: z
    .array(z.looseObject({ key: z.string(), modRevision: count, hash: z.string(), bytes: count, state: z.enum(['retained', 'compacted', 'mismatch']), value: z.string().optional() }))
    .default([]),
});

export type ApiService = z.output<typeof apiService>;
export type ApiReplica = z.output<typeof apiReplica>;
export type ApiNode = z.output<typeof apiNode>;
export type ApiVolume = z.output<typeof apiVolume>;
export type WhyAnswer = z.output<typeof whyAnswer>;
export type ApplyAnswer = z.output<typeof applyAnswer>;
