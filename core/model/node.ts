import { z } from 'zod';
import { toDiagnostic } from '../diagnostics/coerce.js';
import { makeDiagnostic } from '../diagnostics/error.js';
import type { Diagnostic } from '../diagnostics/types.js';
import { taintPattern } from './constraints.js';
import { LIMITS } from './defaults.js';
import { DNS_LABEL_MAX, labelKeyPattern, nodeNamePattern } from './names.js';
import { peerInfoSchema } from './quorum.js';

/**
 * Something an agent reports about its node that keeps new placements away while it holds
 * (docs/agent.md, "A full disk"): typed, with its coded diagnostic; the message is for people.
 */
export const nodeConditionSchema = z.object({
  kind: z.enum(['disk-full']),
  code: z.string().regex(/^CCA-E\d{4}$/),
  message: z.string().max(1000),
  /** Wall-clock ms at which the agent saw it begin. */
  since: z.int().min(0),
});
export type NodeCondition = z.output<typeof nodeConditionSchema>;

/** Conditions of a node that keep new placements away (the scheduler's exclusion text for each). */
export const CONDITION_TEXT: Record<NodeCondition['kind'], string> = { 'disk-full': 'disk full' };

/**
 * Replicas one node may hold (`cca agent --max-replicas`): a placement resource like CPU and
 * memory. The cap is what bounds every record that lists a node's replicas (its allocation,
 * its network rule set, its assignments' page): they grow with it, never past `max`.
 */
export const NODE_REPLICAS = { default: 250, max: 1_000 } as const;

/**
 * The most bytes a node's allocation record (`/allocations/<node>`) can take: a node name of
 * at most 253 characters, NODE_REPLICAS.max replica ids (a service name, a DNS label, plus
 * `-` and 8 characters), quoted and comma-separated, and its numbers.
 */
export function allocationMaxBytes(): number {
  const id = DNS_LABEL_MAX + 9 + 3;
  return 253 + NODE_REPLICAS.max * id + 256;
}

/**
 * What an agent declares when it registers (`/nodes/<node>`, on the agent's lease). Small
 * on purpose: capacity, where it is, what it offers (labels, images) and what it repels (taints).
 */
export const nodeRecordSchema = z.object({
  name: z.string().max(253).regex(nodeNamePattern, 'must be a hostname-like name: lowercase letters, digits, dots and dashes'),
  /** Where replicas on this node can be reached (host networking by default). */
  address: z.string().max(255).default(''),
  zone: z.string().min(1).max(63).default('default'),
  labels: z.record(z.string().regex(labelKeyPattern), z.string().max(63)).default({}),
  /** "key" or "key=value"; only services that accept them are placed here. */
  taints: z.array(z.string().regex(taintPattern)).max(64).default([]),
  capacity: z.object({
    cpuMillis: z.int().min(1).max(LIMITS.cpuMillis),
    memoryBytes: z.int().min(1).max(LIMITS.memoryBytes),
    /** Replicas the scheduler places here at most (NODE_REPLICAS). */
    replicas: z.int().min(1).max(NODE_REPLICAS.max).default(NODE_REPLICAS.default),
  }),
  /** The node's image catalogue: image reference → digest (see the agent issue). */
  images: z.record(z.string(), z.string()).default({}),
  /** The node pulls images outside its catalogue from their registries (a containerd node): any image fits it. */
  pulls: z.boolean().default(false),
  /** The runtime the agent drives: fake, process or containerd. */
  runtime: z.string().max(32).default('fake'),
  agentVersion: z.string().max(64).default(''),
  /** The lease TTL the agent registered with (set by the server); absent: the store lease's own TTL. */
  leaseTtlSeconds: z.int().min(1).max(3600).optional(),
  /** Where peers ask this agent whether it reaches the control plane, and the key its answers are signed with (docs/fencing.md). */
  peer: peerInfoSchema.optional(),
  /** What the agent reports wrong with the node (a full disk): no new placements while any holds. Updated by registering again under the same lease. */
  conditions: z.array(nodeConditionSchema).max(8).default([]),
  /**
   * Set by the server (its clock, ms): when this node last registered or came back from a
   * silence of R or more. Its renewals count toward an expiry's majority only G after it (docs/fencing.md).
   */
  renewingSince: z.int().min(0).optional(),
});

export type NodeRecord = z.output<typeof nodeRecordSchema>;
export type NodeRecordInput = z.input<typeof nodeRecordSchema>;

/** Is the image in the catalogue of at least one node? Matches by exact reference. */
export function imageInCatalogue(image: string, nodes: readonly (Pick<NodeRecord, 'images'> & { pulls?: boolean })[]): boolean {
  return nodes.some((n) => n.pulls === true || Object.hasOwn(n.images, image));
}

/** Validate an agent's declared node (flags or config file) into a record, or one coded diagnostic per problem. */
export function validateNode(input: unknown): { ok: true; value: NodeRecord } | { ok: false; diagnostics: Diagnostic[] } {
  let r: ReturnType<typeof nodeRecordSchema.safeParse>;
  try {
    r = nodeRecordSchema.safeParse(input);
  } catch (e) {
    return { ok: false, diagnostics: [toDiagnostic(e, 'the node record validator')] };
  }
  if (r.success) return { ok: true, value: r.data };
  const name = typeof input === 'object' && input !== null && typeof (input as { name?: unknown }).name === 'string' ? (input as { name: string }).name : '(unnamed)';
  return {
    ok: false,
    diagnostics: r.error.issues.map((i) => {
      const where = i.path.map(String).join('.') || 'the record';
      return makeDiagnostic('CCA-E0317', { node: name, reason: `${where}: ${i.message}` });
    }),
  };
}

/**
 * Services whose image no node offers (CCA-E0316, blame user): held, not retried forever.
 * The catalogue is the union of the nodes' `images`.
 */
export function imagesMissing(specs: readonly { name: string; image: string }[], nodes: readonly (Pick<NodeRecord, 'images'> & { pulls?: boolean })[]): Diagnostic[] {
  const known = [...new Set(nodes.flatMap((n) => Object.keys(n.images)))].sort();
  return specs
    .filter((s) => !imageInCatalogue(s.image, nodes))
    .map((s) => makeDiagnostic('CCA-E0316', { service: s.name, image: s.image, known: known.length > 0 ? known.join(', ') : '(no images yet)' }));
}
